"""Pods that do what a0 does when the user's function raises: write error.pb beside the outputs (the
`--outputs-path` argument), with the blob keys the pod's environment holds, and exit 0.

`ERROR_PB_WRITER` is the start of a pod's Python program (python_template's code): it defines
`write_error_pb(error)`, which a test's own lines then call with an `execution_pb2.ContainerError`."""

from __future__ import annotations

ERROR_PB_WRITER = """
import os, sys, boto3
from flyteidl2.core import execution_pb2
def write_error_pb(error):
    outputs = sys.argv[sys.argv.index("--outputs-path") + 1]
    bucket, _, prefix = outputs.removeprefix("s3://").partition("/")
    s3 = boto3.client("s3", endpoint_url=os.environ["FLYTE_AWS_ENDPOINT"], region_name="us-east-1",
                      aws_access_key_id=os.environ["FLYTE_AWS_ACCESS_KEY_ID"],
                      aws_secret_access_key=os.environ["FLYTE_AWS_SECRET_ACCESS_KEY"])
    document = execution_pb2.ErrorDocument(error=error)
    s3.put_object(Bucket=bucket, Key=prefix + "/error.pb", Body=document.SerializeToString())
"""
assert "{" not in ERROR_PB_WRITER  # so a test may `.format` the program it starts
