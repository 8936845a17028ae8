"""The built-in endpoint's model replies: deterministic, and of a length that varies with the
conversation (so length-adjusted scores have something to measure offline)."""

from __future__ import annotations

from healthbench_exp.builtin_endpoint.replies import model_reply
from healthbench_exp.data.healthbench import load_examples
from tests.data.test_professional import PRO_SAMPLE


def test_reply_length_varies_with_the_conversation_and_repeats_exactly() -> None:
    system = {"role": "system", "content": "You are a helpful assistant."}
    conversations = [[system, *e.prompt] for e in load_examples(PRO_SAMPLE)]
    replies = [model_reply("offline-model", 0.5, c) for c in conversations]
    assert replies == [model_reply("offline-model", 0.5, c) for c in conversations]
    lengths = sorted(len(r) for r in replies)
    assert len(set(lengths)) >= len(lengths) // 2
    assert lengths[0] < 100 and lengths[-1] > 300  # one sentence to five
