import { readFileSync } from "node:fs";
import { expect } from "chai";
import { Registry } from "prom-client";
import { IndexerMetrics } from "../../indexer/metrics.js";
import { RelayerMetrics } from "../../relayer/ops/metrics.js";
import { SellerPaymentMetrics, SHIELDED_FACILITATOR_METRICS_PREFIX } from "../../seller/index.js";
import { hasPromtool, promtool } from "../helpers/promtool.js";

const RULES = "monitoring/rules.yml";
const RULE_TESTS = "monitoring/rules.test.yml";
const PROMETHEUS_CONFIG = "monitoring/prometheus.yml";
const DASHBOARD = "monitoring/dashboard.json";

/** Every metric name the services and the plug-in facilitator expose, with a histogram's series (_bucket, _sum, _count). */
async function exposedMetricNames(): Promise<Set<string>> {
  const names = new Set<string>();
  const plugIn = new Registry();
  new SellerPaymentMetrics(plugIn, SHIELDED_FACILITATOR_METRICS_PREFIX);
  for (const registry of [new RelayerMetrics().registry, new IndexerMetrics().registry, plugIn]) {
    for (const metric of await registry.getMetricsAsJSON()) {
      names.add(metric.name);
      if (String(metric.type) === "histogram") for (const suffix of ["_bucket", "_sum", "_count"]) names.add(`${metric.name}${suffix}`);
    }
  }
  return names;
}

describe("monitoring/: alert rules with their tests, a Prometheus configuration and the dashboard", function () {
  it("has a test that fires every alert rule", function () {
    const rules = [...readFileSync(RULES, "utf8").matchAll(/^\s+- alert: (\w+)$/gm)].map((match) => match[1]);
    const fired = new Set([...readFileSync(RULE_TESTS, "utf8").matchAll(/alertname: (\w+)\n\s+exp_alerts:\n\s+- exp_labels/g)].map((match) => match[1]));
    expect(rules).to.have.length.above(15);
    expect(rules.filter((rule) => !fired.has(rule)), "rules no test fires").to.deep.equal([]);
  });

  it("names only metrics the relayer, the indexer and the plug-in facilitator expose, in the rules and in every panel of the dashboard", async function () {
    const exposed = await exposedMetricNames();
    const dashboard = JSON.parse(readFileSync(DASHBOARD, "utf8")) as { panels: { title: string; targets: { expr: string }[] }[] };
    expect(dashboard.panels.every((panel) => panel.targets.length > 0)).to.equal(true);
    const expressions = [readFileSync(RULES, "utf8"), ...dashboard.panels.flatMap((panel) => panel.targets.map((target) => target.expr))];
    const named = new Set(expressions.flatMap((text) => [...text.matchAll(/\b(?:relayer|indexer|shielded_facilitator)_[a-z0-9_]+\b/g)].map((match) => match[0])));
    expect([...named].filter((name) => !exposed.has(name)), "metrics no service exposes").to.deep.equal([]);
  });

  describe("promtool", function () {
    before(function () {
      if (hasPromtool()) return;
      console.log("      promtool is not installed (Debian, Ubuntu: apt-get install prometheus): the promtool checks of monitoring/ are skipped");
      this.skip();
    });

    it("checks the rules and the Prometheus configuration", function () {
      expect(promtool(["check", "rules", RULES])).to.match(/SUCCESS: \d+ rules found/);
      expect(promtool(["check", "config", PROMETHEUS_CONFIG])).to.contain("is valid prometheus config file syntax");
    });

    it("passes the rules' unit tests: series in, alerts out (the first refused spend, the first 500, the indexer or its database down, an expired payer waiting, a relay unmined...)", function () {
      expect(promtool(["test", "rules", RULE_TESTS])).to.contain("SUCCESS");
    });
  });
});
