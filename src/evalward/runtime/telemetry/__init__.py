"""What an agent reports of its run, read into a Trace: evalward's event protocol,
OpenTelemetry spans (and the OTLP receiver), and the SDKs' own message lists."""
