# Prometheus conventions (docs/metrics.md): promtool, from Debian's prometheus
# package, lints every verb's /metrics in the tests (testsupport.CheckMetrics),
# so `make setup` and `make test` install it when it is missing. Only the
# package's promtool is used: the Prometheus server it also installs is
# disabled, as the redis target does with redis-server.
.PHONY: promtool metrics-test

promtool:
	@if ! command -v promtool >/dev/null; then \
		echo "setup: installing prometheus (for promtool) with apt-get"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; \
		systemctl disable --now prometheus >/dev/null 2>&1 || service prometheus stop >/dev/null 2>&1 || true; \
	fi

setup: promtool

TEST_DEPS += promtool

## metrics-test: each verb's /metrics (advantage serve, learn --redis, rollout --worker) through `promtool check metrics` and against docs/metrics.md
metrics-test: setup
	CI=true $(GO) test -count=1 -run '^(TestAdvantageServeMetrics|TestLearnRedisServesMetricsAndExits130|TestRolloutWorkerServesMetrics)$$' ./cmd/toolrl
	CI=true $(GO) test -count=1 -run '^(TestServiceMetricsHealthAndStaleness|TestServiceStreamDepthGauges|TestServiceMetricNames)$$' ./advantage/serve
