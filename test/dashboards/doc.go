// Package dashboards evaluates the PromQL queries a Karpenter user's dashboards and alerts run (queries.go) on
// scrapes of Dovetail's /metrics endpoint taken by the end-to-end test TestKarpenterMetricsScraped, and requires
// every query to return data. The queries are evaluated by Prometheus's own engine (github.com/prometheus/prometheus/
// promql) on its in-memory test storage, so a query behaves here as it does in a Prometheus server. It is a nested
// module so the main module never depends on Prometheus's server code.
package dashboards
