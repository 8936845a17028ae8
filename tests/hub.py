"""The Hugging Face Hub as a test asks for it, whatever the machine's environment says.

`HF_HUB_OFFLINE=1` (docs/scaling.md recommends it on offline nodes), `HF_DATASETS_OFFLINE=1` or
`TRANSFORMERS_OFFLINE=1` in the environment that runs the suite make `datasets` skip the Hub and
read its cache: a test about the Hub being asked (and failing) sets them off in its subprocess.
"""

from __future__ import annotations

HUB_ASKED: dict[str, str] = {
    "HF_HUB_OFFLINE": "0",
    "HF_DATASETS_OFFLINE": "0",
    "TRANSFORMERS_OFFLINE": "0",
}
