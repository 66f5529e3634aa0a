"""The embedded server's one call beyond Armada's API: the job sets it holds (`armada-flyte view` of `dev`), and
the address of the local view served beside it, if one is (a local run's last line names it).

Armada's gRPC API cannot list job sets (Lookout's database answers that on a real Armada), so a view of
another process's embedded server asks it with this call; a real Armada answers UNIMPLEMENTED, and the view
then follows the job sets it is given. JSON over gRPC, so neither side needs generated code; the server's
authentication applies to it as to every call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

SERVICE = "armadaflyte.JobSets"
METHOD = "List"
PATH = f"/{SERVICE}/{METHOD}"


@dataclass(frozen=True)
class ListedJobSet:
    queue: str
    job_set: str
    jobs: int
    newest_job: str
    """The id of its newest job (Armada's ids sort by submission time)."""


def encode_request() -> bytes:
    return b"{}"


def decode_request(data: bytes) -> dict:
    return json.loads(data or b"{}")


@dataclass(frozen=True)
class Listing:
    job_sets: list[ListedJobSet]
    view: str = ""
    """The local view's address, when one serves beside the server (`armada-flyte dev`, `stack_view`)."""


def encode_response(listing: Listing) -> bytes:
    return json.dumps({"job_sets": [vars(s) for s in listing.job_sets], "view": listing.view}).encode()


def decode_response(data: bytes) -> Listing:
    document = json.loads(data)
    return Listing([ListedJobSet(**entry) for entry in document["job_sets"]], document.get("view", ""))
