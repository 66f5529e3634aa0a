// Command backend-dial reaches a connector service as Flyte's connector plugin does, so tests can check
// a TLS setup against the backend's own client behaviour (flyteorg/flyte at 6fadb90,
// flyteplugins/go/tasks/plugins/webapi/connector/client.go, getGrpcConnection):
//   - `insecure: true`: plaintext;
//   - `insecure: false`: TLS, checked against the system's roots only (x509.SystemCertPool, which on
//     Linux reads SSL_CERT_FILE and SSL_CERT_DIR), no client certificate, and the server name taken
//     from the endpoint (no override);
//   - `defaultServiceConfig` given to the channel as its default service config.
// It built with the grpc-go release the backend pins (its go.mod).
//
// Usage: backend-dial -endpoint dns:///HOST:PORT [-insecure] [-service-config JSON] [-calls N]
// Asks gRPC health about the connector service N times; prints each answer, exits 1 on the first error.
package main

import (
	"context"
	"crypto/x509"
	"flag"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	endpoint := flag.String("endpoint", "", "the connector's endpoint, as in the plugin's config")
	plaintext := flag.Bool("insecure", false, "the plugin's `insecure: true`")
	serviceConfig := flag.String("service-config", "", "the plugin's defaultServiceConfig")
	calls := flag.Int("calls", 1, "health calls to make")
	flag.Parse()

	var options []grpc.DialOption
	if *plaintext {
		options = append(options, grpc.WithTransportCredentials(insecure.NewCredentials()))
	} else {
		roots, err := x509.SystemCertPool()
		if err != nil {
			fmt.Fprintln(os.Stderr, "system roots:", err)
			os.Exit(1)
		}
		options = append(options, grpc.WithTransportCredentials(credentials.NewClientTLSFromCert(roots, "")))
	}
	if *serviceConfig != "" {
		options = append(options, grpc.WithDefaultServiceConfig(*serviceConfig))
	}
	conn, err := grpc.Dial(*endpoint, options...) // as the plugin dials (deprecated in grpc-go, kept for fidelity)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dial:", err)
		os.Exit(1)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	for i := 0; i < *calls; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		answer, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: "flyteidl2.connector.AsyncConnectorService"})
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, "health:", err)
			os.Exit(1)
		}
		fmt.Println(answer.GetStatus())
	}
}
