"""The built-in endpoint's files and batches API: enough of OpenAI's for the Batch API."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from email.message import Message
from email.parser import BytesParser

from healthbench_exp.builtin_endpoint.replies import Faults, completion_response
from healthbench_exp.builtin_endpoint.responses import as_system, chat_request, response_reply


@dataclass
class StoredFile:
    filename: str
    purpose: str
    content: bytes


@dataclass
class StoredBatch:
    endpoint: str
    input_file_id: str
    completion_window: str
    output_file_id: str
    total: int
    created_at: float


class BatchStore:
    """The files and batches API, enough for the Batch API: upload a JSONL of chat-completion
    (`/v1/chat/completions`) or Responses API (`/v1/responses`) requests, create a batch
    (answered at once, reported `in_progress` for `delay_s`), poll it, download its output
    file."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.files: dict[str, StoredFile] = {}
        self.batches: dict[str, StoredBatch] = {}

    def _add_file(self, name: str, purpose: str, content: bytes) -> dict[str, object]:
        file_id = f"file-offline-{len(self.files) + 1}"
        self.files[file_id] = StoredFile(name, purpose, content)
        return {
            "id": file_id, "object": "file", "bytes": len(content), "created_at": int(time.time()),
            "filename": name, "purpose": purpose, "status": "processed",
        }  # fmt: skip

    def upload(self, content_type: str, raw: bytes) -> dict[str, object]:
        """A multipart/form-data upload with fields `purpose` and `file`."""
        message = BytesParser().parsebytes(
            b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw
        )
        fields: dict[str, tuple[str | None, bytes]] = {}
        for part in message.get_payload():
            assert isinstance(part, Message)  # a multipart body: a list of messages
            name = str(part.get_param("name", header="content-disposition"))
            payload = part.get_payload(decode=True)
            assert isinstance(payload, bytes)  # decode=True on a leaf part
            fields[name] = (part.get_filename(), payload)
        filename, content = fields["file"]
        return self._add_file(filename or "upload.jsonl", fields["purpose"][1].decode(), content)

    def create(self, request: Mapping[str, object], faults: Faults) -> dict[str, object]:
        """Answer every request of the input file now; report the batch done after delay_s."""
        input_file_id = str(request["input_file_id"])
        lines = self.files[input_file_id].content.decode().splitlines()
        output: list[dict[str, object]] = []
        for line in filter(str.strip, lines):
            item = json.loads(line)
            sent = item["body"]
            responses = item.get("url") == "/v1/responses"
            body, messages = chat_request(sent) if responses else (sent, sent["messages"])
            status, payload, _ = completion_response(
                faults, faults.draw()[1], str(body["model"]), body, as_system(messages)
            )
            if status == 200 and responses:
                payload = response_reply(payload, sent.get("max_output_tokens"))
            faults.count("requests")
            faults.count("batch_requests")
            output.append(
                {
                    "id": f"batch_req_{len(output)}",
                    "custom_id": item["custom_id"],
                    "response": {"status_code": int(status), "request_id": "", "body": payload},
                    "error": None,
                }
            )
        out = self._add_file(
            "output.jsonl", "batch_output", "".join(json.dumps(o) + "\n" for o in output).encode()
        )
        faults.count("batches_created")
        batch_id = f"batch_offline_{len(self.batches) + 1}"
        self.batches[batch_id] = StoredBatch(
            endpoint=str(request["endpoint"]),
            input_file_id=input_file_id,
            completion_window=str(request["completion_window"]),
            output_file_id=str(out["id"]),
            total=len(output),
            created_at=time.time(),
        )
        return self.describe(batch_id)

    def describe(self, batch_id: str) -> dict[str, object]:
        batch = self.batches[batch_id]
        done = time.time() >= batch.created_at + self.delay_s
        return {
            "id": batch_id,
            "object": "batch",
            "endpoint": batch.endpoint,
            "input_file_id": batch.input_file_id,
            "completion_window": batch.completion_window,
            "status": "completed" if done else "in_progress",
            "created_at": int(batch.created_at),
            "output_file_id": batch.output_file_id if done else None,
            "error_file_id": None,
            "request_counts": {
                "total": batch.total,
                "completed": batch.total if done else 0,
                "failed": 0,
            },
        }
