"""An agent that exports OpenTelemetry GenAI spans the way instrumented frameworks do: the
SDK's own OTLP/HTTP exporter (protobuf), configured by the standard environment variables.

    otel_agent.py QUESTION [--model] [--json]

It runs `lookup_order` inside an `execute_tool` span. With `--model` it first asks the model
(through the proxy) which tool to call, and tags the span with the model's call id; without,
it calls the tool on its own. `--json` posts the export as OTLP/JSON, gzip-compressed, by
hand, instead of through the protobuf exporter.
"""

import argparse
import gzip
import json
import os
import time
import urllib.request

import openai
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor


def post_json_export(call_id: str, arguments: dict, result: str) -> None:
    now = time.time_ns()
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup_order",
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.call.arguments": json.dumps(arguments),
        "gen_ai.tool.call.result": result,
    }
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "name": "execute_tool lookup_order",
        "startTimeUnixNano": str(now),
        "endTimeUnixNano": str(now + 1000),
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
    }
    document = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    request = urllib.request.Request(
        os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"],
        data=gzip.compress(json.dumps(document).encode()),
        headers={"content-type": "application/json", "content-encoding": "gzip"},
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        assert reply.status == 200, reply.status


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("question")
    parser.add_argument("--model", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    tracer = provider.get_tracer("otel-agent")
    call_id, arguments = "own-call-1", {"order_id": "12345"}
    if args.model:
        reply = openai.OpenAI().chat.completions.create(
            model="gpt-4.1-mini",
            messages=[{"role": "user", "content": args.question}],
            tools=[{"type": "function", "function": {"name": "lookup_order", "parameters": {}}}],
        )
        call = reply.choices[0].message.tool_calls[0]
        call_id, arguments = call.id, json.loads(call.function.arguments)
    result = json.dumps({"status": "shipped"})
    if args.json:
        post_json_export(call_id, arguments, result)
    else:
        with tracer.start_as_current_span("execute_tool lookup_order") as span:
            span.set_attribute("gen_ai.operation.name", "execute_tool")
            span.set_attribute("gen_ai.tool.name", "lookup_order")
            span.set_attribute("gen_ai.tool.call.id", call_id)
            span.set_attribute("gen_ai.tool.call.arguments", json.dumps(arguments))
            span.set_attribute("gen_ai.tool.call.result", result)
    provider.shutdown()
    print("Your order 12345 has shipped.")


if __name__ == "__main__":
    main()
