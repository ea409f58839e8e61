"""What an incremental upgrade decides: traffic and capacity steps, the Gateway and HTTPRoute, the
controls."""
