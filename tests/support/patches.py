"""Clients whose workers leave one patch off in new runs: a run recorded as the code before the
patch would have made it (``tests/record_histories.py``)."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.plugin import SimplePlugin
from temporalio.worker import PatchActivationInput, WorkerConfig


class PatchOff(SimplePlugin):
    """A client and worker plugin: ``workflow.patched(patch)`` is false in new runs."""

    def __init__(self, patch: str) -> None:
        super().__init__(f"toolcalls.tests.without-{patch}")
        self.patch = patch

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        config = super().configure_worker(config)
        config["patch_activation_callback"] = self._activate
        return config

    def _activate(self, patch: PatchActivationInput) -> bool:
        return patch.patch_id != self.patch


def without_patch(client: Client, patch: str) -> Client:
    """``client`` again, with workers (built with it) that leave ``patch`` off."""
    config = client.config()
    config["plugins"] = [PatchOff(patch)]
    return Client(**config)
