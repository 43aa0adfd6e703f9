# Reference chat-template renderer (@huggingface/jinja) for orchestrator/chat_test.go.
ORCH_NODE := scripts/orchestrator/node_modules/@huggingface/jinja/package.json
TEST_DEPS += $(ORCH_NODE)

$(ORCH_NODE): scripts/orchestrator/package.json
	@echo "setup: npm install @huggingface/jinja (scripts/orchestrator)"
	@npm install --prefix scripts/orchestrator --no-audit --no-fund --silent >/dev/null
	@touch $@
