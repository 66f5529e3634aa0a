"""What the connector works with, built from one resolution of its settings and closed together: the
API client, the status view, the node groups, what of the settings shapes a job, the rules of the poll's
decision and the fetching of its facts."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Optional

from armada_flyte.connector.armada.api import ArmadaApi
from armada_flyte.connector.config.blob import BlobSettings
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.config.settings import ConnectorConfig
from armada_flyte.connector.poll.gather import FactFinder
from armada_flyte.connector.poll.outcome import Rules
from armada_flyte.connector.poll.status_view import StatusView
from armada_flyte.connector.submit.plan import SubmitSettings


@dataclass(frozen=True)
class ConnectorContext:
    """What the connector works with, built from one resolution of the settings and closed together."""

    settings: ConnectorConfig
    api: ArmadaApi
    view: StatusView
    node_groups: NodeGroups
    submit: SubmitSettings
    rules: Rules
    facts: FactFinder

    @classmethod
    def of(cls, settings: ConnectorConfig, view_loop: Optional[asyncio.AbstractEventLoop] = None) -> ConnectorContext:
        """Everything new: a client and a view of their own (`service.ArmadaConnector` closes them); the view runs
        on `view_loop` when it is running (`StatusView`'s home loop)."""
        node_groups, timeouts = settings.node_groups(), settings.timeouts
        api, view = ArmadaApi(settings), StatusView(settings, view_loop)
        rules = Rules(
            timeouts.ack_timeout_seconds,
            timeouts.error_read_grace_seconds,
            node_groups,
            timeouts.queued_report_after_seconds,
            timeouts.queued_report_refresh_seconds,
            frozenset(settings.targets.platform_mismatch_categories),
        )
        blob = BlobSettings.from_settings(settings.blob)
        facts = FactFinder(api, view, blob, timeouts.error_read_timeout_seconds, node_groups)
        return cls(settings, api, view, node_groups, SubmitSettings.of(settings, node_groups), rules, facts)
