"""Moved: the Studio object wires the stages (a workspace, the job runner, the device), so it is
rloo_studio.studio now. This name stays only until the UI modules import it from there."""
from rloo_studio.studio import Studio  # noqa: F401
