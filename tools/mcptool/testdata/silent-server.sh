#!/bin/sh
# An MCP server that reads its requests and never answers (not even
# initialize), its stdout left open; mcptool's timeouts must stop it.
while read -r request; do :; done
