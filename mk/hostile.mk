# The hostile re-run of issue #17 (docs/refusals.md): every fault a hostile
# run of the CLI found, reproduced against bin/toolrl, a private redis-server
# and the default policy; prints a table and fails if any check fails.
.PHONY: hostile

## hostile: re-run the hostile reproductions (wrong passwords, same-file outputs, zero flags, over-long prompts, resume with other settings, Redis restarts, ...)
hostile: build ort redis
	scripts/hostile/rerun.sh
