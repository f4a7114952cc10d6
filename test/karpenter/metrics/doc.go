// Package metrics lists the metrics Karpenter registers (sigs.k8s.io/karpenter and
// github.com/aws/karpenter-provider-aws, v1.14.3 here; v115/ holds the same oracle for v1.15) from Karpenter's own
// packages, and checks the committed list testdata/karpenter-metrics.json against them (oracle/ is the code both
// versions share). The end-to-end test TestKarpenterMetricsScraped (test/e2e), the dashboard queries
// (test/dashboards) and pkg/metrics's catalog test (TestCatalogAgreesWithKarpenter: Dovetail's metrics called the
// same as Karpenter's have its type and labels) read that list. It is a nested module so the main module never
// depends on Karpenter.
package metrics
