"""The run's OpenTelemetry receiver: OTLP over HTTP, on the model proxy's port.

Every process of a fixture run is told to export its traces here
(`OTEL_EXPORTER_OTLP_ENDPOINT`, under a path that holds the run's key), so an agent that
exports GenAI spans — its framework's instrumentation or its own — has them read into its
trace like the model proxy's view of its calls (`runtime.otel` converts them), and no span
leaves the run. Exports come as OTLP/JSON or as protobuf (what the SDKs' default exporters
send), compressed (gzip or deflate, inflated here to MAX_EXPORT_BYTES) or not. Metrics and
logs are accepted and dropped. A run keeps of its exports only the tool spans its steps are
made of, up to MAX_KEPT_BYTES in all: an export past that is refused, and the run's trace
says its spans were dropped.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from evalward.errors import ExportError, NoSpans, ProtocolError
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.telemetry.otel import Span, read_spans, tool_spans, tool_steps
from evalward.text import jsontext

if TYPE_CHECKING:
    from aiohttp import web

PREFIX = "/otlp/"
SIGNALS = ("traces", "metrics", "logs")
MAX_EXPORT_BYTES = 32 * 1024 * 1024
MAX_KEPT_BYTES = MAX_EXPORT_BYTES
"""The most a run keeps of all its exports' spans until its end, in the measure of
`_kept_size`: an export is read alone within MAX_EXPORT_BYTES, but a run may send many, and
each one's spans are held until the run is over (ten exports of 20 MB, kept whole, held
2.4 GB). A run's tool spans are far fewer: a thousand calls with arguments and results of
10 kB each are a third of it."""
SPAN_BYTES = 512
"""What one kept span counts beyond its text: the objects that hold it (about 300 bytes for
a span with one short attribute), so that many empty spans are bounded as a few large ones
are."""
PROTOBUF = "application/x-protobuf"
_INFLATE_PIECE = 1 << 20
_GZIP_OR_ZLIB = 32 + zlib.MAX_WBITS
"""zlib's window bits that read either header: the exporters' `gzip` and `deflate`."""


def exporter_env(endpoint: str) -> dict[str, str]:
    """Where a run's processes send their traces: the OTLP/HTTP variables every
    OpenTelemetry SDK reads. The batch processor exports within a fifth of a second, so
    spans arrive while the run is still open."""
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{endpoint}/v1/traces",
        "OTEL_BSP_SCHEDULE_DELAY": "200",
    }


@dataclass
class KeptSpans:
    """What a run keeps of its exports until its end (`merge_exports`): the spans that show
    its tool calls, and how much they count against MAX_KEPT_BYTES."""

    spans: list[Span] = field(default_factory=list)
    size: int = 0
    dropped: int = 0
    """Exports refused because their spans would have taken `size` past MAX_KEPT_BYTES."""


class Receiver(Protocol):
    """What an export is kept in: a live key of the model proxy (runtime/proxy/grants.py's Grant,
    which builds on this module, hence a protocol)."""

    trace: Trace | None
    exports: KeptSpans


async def receive(request: web.Request, grants: Mapping[str, Receiver]) -> web.Response:
    """One OTLP/HTTP export: `POST /otlp/<key>/v1/<signal>`."""
    from aiohttp import web

    key, _, rest = request.path.removeprefix(PREFIX).partition("/")
    grant = grants.get(key)
    signal = rest.removeprefix("v1/")
    if request.method != "POST" or signal not in SIGNALS:
        return web.Response(status=404, text="evalward receives OTLP/HTTP at …/v1/traces")
    if grant is None:
        return web.Response(status=401, text="not a live key of this run of evalward")
    protobuf = request.content_type == PROTOBUF
    if signal == "traces" and grant.trace is not None:
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            too_large = f"the export is larger than {MAX_EXPORT_BYTES:,} bytes"
            return web.Response(status=400, text=f"evalward cannot read this export: {too_large}")
        encoding = request.headers.get("content-encoding", "")
        problem = take_export(grant.trace, grant.exports, body, request.content_type, encoding)
        if problem is not None:
            return web.Response(status=400, text=f"evalward cannot read this export: {problem}")
    if protobuf:
        return web.Response(status=200, body=b"", content_type=PROTOBUF)
    return web.Response(status=200, body=b"{}", content_type="application/json")


def take_export(
    trace: Trace, exports: KeptSpans, body: bytes, content_type: str, encoding: str
) -> str | None:
    """Keep the tool spans of one export for the run's end (`merge_exports`), or say why
    not: an export an agent sends is its own data, so one that is not in its shape is an
    error of that run, located, and never more. So is one whose spans would take what the
    run keeps past MAX_KEPT_BYTES: it is refused, and the run's trace says spans were
    dropped (once: the steps of a run that keeps exporting do not grow either)."""
    try:
        spans = tool_spans(read_spans(decode(body, content_type, encoding)))
    except NoSpans:
        return None  # a metrics-only batch, an empty flush: nothing to keep
    except (ExportError, ProtocolError) as exc:
        trace.add(
            StepType.error, content=f"an OpenTelemetry export of this run is unreadable: {exc}"
        )
        return str(exc)
    size = sum(_kept_size(span) for span in spans)
    if exports.size + size > MAX_KEPT_BYTES:
        past = (
            f"its spans would take what this run keeps of its exports past {MAX_KEPT_BYTES:,} bytes"
        )
        if not exports.dropped:
            trace.add(
                StepType.error,
                content=f"OpenTelemetry spans of this run were dropped: an export was refused, "
                f"as {past} (and so is every later export that would)",
            )
        exports.dropped += 1
        return past
    exports.spans += spans
    exports.size += size
    return None


def _kept_size(span: Span) -> int:
    """What keeping `span` counts against MAX_KEPT_BYTES: its text, as JSON writes it, and
    SPAN_BYTES for the objects that hold it."""
    try:
        text = json.dumps(
            [span.trace_id, span.name, span.attributes], ensure_ascii=False, default=str
        )
    except (ValueError, RecursionError):  # a value JSON cannot write: counted as Python shows it
        text = repr(span)
    return SPAN_BYTES + len(text)


def decode(body: bytes, content_type: str, encoding: str) -> object:
    """An export's spans as an OTLP/JSON document, a compressed body inflated first (the
    HTTP server passes bodies on as they came)."""
    coding = encoding.strip().lower()
    if coding in ("gzip", "deflate"):
        try:
            body = _inflate(body)
        except zlib.error as exc:
            raise ExportError(f"the {coding} body does not inflate ({exc})") from None
    if content_type == PROTOBUF:
        document = _from_protobuf(body)
        try:
            jsontext.check_depth(document, jsontext.AGENT_DEPTH)
        except ValueError as exc:
            raise ExportError(str(exc)) from None
        return document
    try:
        return jsontext.loads(body, max_depth=jsontext.AGENT_DEPTH)
    except ValueError as exc:
        raise ExportError(f"the body is not JSON ({exc})") from None


def _inflate(body: bytes) -> bytes:
    """Inflated a megabyte at a time, so that a bomb is refused holding no more than the
    bound (inflated at once, zlib's buffer and its result held it twice)."""
    inflate = zlib.decompressobj(_GZIP_OR_ZLIB)
    pieces: list[bytes] = []
    size = 0
    pending = body
    while pending:
        piece = inflate.decompress(pending, _INFLATE_PIECE)
        pending = inflate.unconsumed_tail
        pieces.append(piece)
        size += len(piece)
        if size > MAX_EXPORT_BYTES:
            raise ExportError(f"the export inflates to more than {MAX_EXPORT_BYTES:,} bytes")
    pieces.append(inflate.flush())
    return b"".join(pieces)


def _from_protobuf(body: bytes) -> object:
    # lazy: the protobuf runtime loads only when an agent exports protobuf
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    message = ExportTraceServiceRequest()
    try:
        message.ParseFromString(body)
    except DecodeError as exc:
        raise ExportError(f"the body is not an OTLP trace export ({exc})") from None
    document: dict[str, Any] = MessageToDict(message)
    return document


def merge_exports(trace: Trace, exports: KeptSpans) -> None:
    """The tool calls and results the exported spans show, merged into the run's steps."""
    for step_type, fields in tool_steps(sorted(exports.spans, key=lambda s: s.start)):
        trace.record(step_type, "otel", **fields)
