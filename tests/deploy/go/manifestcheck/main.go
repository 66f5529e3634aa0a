// Command manifest-check reads Kubernetes manifests into the API's own Go types (k8s.io/api) with
// strict decoding, as the API server's strict field validation does: an unknown or misspelt field, a
// key written twice or a value of the wrong type fails, naming the field. It then checks each
// NetworkPolicy against the rules the API server's validation applies to one (ports, protocols, label
// selectors, peers, CIDRs, policy types) and each Deployment's pod for references that must resolve.
//
// Usage: manifest-check FILE...
// Prints "ok KIND/NAME" for each object; exits 1 after printing "FILE: KIND/NAME: problem" lines to stderr.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// newObject is the typed object for apiVersion and kind; the kinds deploy/kubernetes ships.
func newObject(apiVersion, kind string) (any, error) {
	switch apiVersion + " " + kind {
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}, nil
	case "v1 Pod":
		return &corev1.Pod{}, nil
	case "v1 Service":
		return &corev1.Service{}, nil
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "v1 Secret":
		return &corev1.Secret{}, nil
	case "networking.k8s.io/v1 NetworkPolicy":
		return &networkingv1.NetworkPolicy{}, nil
	}
	return nil, fmt.Errorf("apiVersion %q kind %q: not a kind this checker knows", apiVersion, kind)
}

// decodeStrict fills obj from one YAML document, refusing duplicate keys, unknown fields and
// fields spelt in another case (encoding/json would accept those).
func decodeStrict(doc []byte, obj any) error {
	data, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := sigsjson.UnmarshalStrict(data, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

func checkSelector(path string, selector *metav1.LabelSelector) []string {
	if selector == nil {
		return nil
	}
	if _, err := metav1.LabelSelectorAsSelector(selector); err != nil {
		return []string{fmt.Sprintf("%s: %v", path, err)}
	}
	return nil
}

func checkPort(path string, port networkingv1.NetworkPolicyPort) []string {
	var problems []string
	if port.Protocol != nil {
		switch *port.Protocol {
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			problems = append(problems, fmt.Sprintf("%s.protocol: %q is not TCP, UDP or SCTP", path, *port.Protocol))
		}
	}
	if port.Port != nil {
		if port.Port.Type == intstr.Int {
			for _, msg := range validation.IsValidPortNum(int(port.Port.IntVal)) {
				problems = append(problems, fmt.Sprintf("%s.port: %d: %s", path, port.Port.IntVal, msg))
			}
		} else {
			for _, msg := range validation.IsValidPortName(port.Port.StrVal) {
				problems = append(problems, fmt.Sprintf("%s.port: %q: %s", path, port.Port.StrVal, msg))
			}
		}
	}
	if port.EndPort != nil {
		if port.Port == nil || port.Port.Type != intstr.Int {
			problems = append(problems, fmt.Sprintf("%s.endPort: needs a numeric port", path))
		} else if *port.EndPort < port.Port.IntVal {
			problems = append(problems, fmt.Sprintf("%s.endPort: %d is below port %d", path, *port.EndPort, port.Port.IntVal))
		}
	}
	return problems
}

func checkPeer(path string, peer networkingv1.NetworkPolicyPeer) []string {
	var problems []string
	if peer.IPBlock != nil {
		if peer.PodSelector != nil || peer.NamespaceSelector != nil {
			problems = append(problems, path+": ipBlock goes alone, without podSelector or namespaceSelector")
		}
		_, cidr, err := net.ParseCIDR(peer.IPBlock.CIDR)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s.ipBlock.cidr: %v", path, err))
		}
		for i, except := range peer.IPBlock.Except {
			ip, _, err := net.ParseCIDR(except)
			if err != nil || (cidr != nil && !cidr.Contains(ip)) {
				problems = append(problems, fmt.Sprintf("%s.ipBlock.except[%d]: %q is not a CIDR inside %q", path, i, except, peer.IPBlock.CIDR))
			}
		}
	} else if peer.PodSelector == nil && peer.NamespaceSelector == nil {
		problems = append(problems, path+": a peer needs podSelector, namespaceSelector or ipBlock")
	}
	problems = append(problems, checkSelector(path+".podSelector", peer.PodSelector)...)
	return append(problems, checkSelector(path+".namespaceSelector", peer.NamespaceSelector)...)
}

func checkNetworkPolicy(policy *networkingv1.NetworkPolicy) []string {
	problems := checkSelector("spec.podSelector", &policy.Spec.PodSelector)
	for i, rule := range policy.Spec.Ingress {
		for j, port := range rule.Ports {
			problems = append(problems, checkPort(fmt.Sprintf("spec.ingress[%d].ports[%d]", i, j), port)...)
		}
		for j, peer := range rule.From {
			problems = append(problems, checkPeer(fmt.Sprintf("spec.ingress[%d].from[%d]", i, j), peer)...)
		}
	}
	for i, rule := range policy.Spec.Egress {
		for j, port := range rule.Ports {
			problems = append(problems, checkPort(fmt.Sprintf("spec.egress[%d].ports[%d]", i, j), port)...)
		}
		for j, peer := range rule.To {
			problems = append(problems, checkPeer(fmt.Sprintf("spec.egress[%d].to[%d]", i, j), peer)...)
		}
	}
	if len(policy.Spec.PolicyTypes) > 2 {
		problems = append(problems, "spec.policyTypes: at most Ingress and Egress")
	}
	for i, kind := range policy.Spec.PolicyTypes {
		if kind != networkingv1.PolicyTypeIngress && kind != networkingv1.PolicyTypeEgress {
			problems = append(problems, fmt.Sprintf("spec.policyTypes[%d]: %q is not Ingress or Egress", i, kind))
		}
	}
	return problems
}

// checkPod: every mount names a volume of the pod, every port name is a valid IANA service name.
func checkPod(pod corev1.PodSpec) []string {
	var problems []string
	volumes := map[string]bool{}
	for _, volume := range pod.Volumes {
		volumes[volume.Name] = true
	}
	containers := append(append([]corev1.Container{}, pod.InitContainers...), pod.Containers...)
	for _, container := range containers {
		for _, mount := range container.VolumeMounts {
			if !volumes[mount.Name] {
				problems = append(problems, fmt.Sprintf("container %s: volumeMount %q names no volume of the pod", container.Name, mount.Name))
			}
		}
		for _, port := range container.Ports {
			if port.Name == "" {
				continue
			}
			for _, msg := range validation.IsValidPortName(port.Name) {
				problems = append(problems, fmt.Sprintf("container %s: port name %q: %s", container.Name, port.Name, msg))
			}
		}
	}
	return problems
}

func checkDocument(doc []byte) (string, []string) {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return "?", []string{err.Error()}
	}
	obj, err := newObject(meta.APIVersion, meta.Kind)
	if err != nil {
		return meta.Kind, []string{err.Error()}
	}
	if err := decodeStrict(doc, obj); err != nil {
		return meta.Kind, []string{err.Error()}
	}
	name := obj.(metav1.Object).GetName()
	label := meta.Kind + "/" + name
	problems := []string{}
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		problems = append(problems, fmt.Sprintf("metadata.name %q: %s", name, msg))
	}
	switch typed := obj.(type) {
	case *networkingv1.NetworkPolicy:
		problems = append(problems, checkNetworkPolicy(typed)...)
	case *appsv1.Deployment:
		problems = append(problems, checkPod(typed.Spec.Template.Spec)...)
	case *corev1.Pod:
		problems = append(problems, checkPod(typed.Spec)...)
	}
	return label, problems
}

func checkFile(path string) (bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	ok := true
	for {
		doc, err := reader.Read()
		if err == io.EOF {
			return ok, nil
		}
		if err != nil {
			return false, err
		}
		if len(bytes.TrimSpace(doc)) == 0 || isOnlyComments(doc) {
			continue
		}
		label, problems := checkDocument(doc)
		for _, problem := range problems {
			fmt.Fprintf(os.Stderr, "%s: %s: %s\n", path, label, problem)
			ok = false
		}
		if len(problems) == 0 {
			fmt.Printf("ok %s\n", label)
		}
	}
}

func isOnlyComments(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' && !bytes.Equal(line, []byte("---")) {
			return false
		}
	}
	return true
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: manifest-check FILE...")
		os.Exit(2)
	}
	ok := true
	for _, path := range os.Args[1:] {
		fileOK, err := checkFile(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
		}
		ok = ok && fileOK && err == nil
	}
	if !ok {
		os.Exit(1)
	}
}
