// Package settings checks Dovetail's settings table (pkg/settings) against Karpenter's own option packages: every
// flag of Karpenter v1.14's core and AWS provider options, its environment variable and its default, must be a
// Dovetail setting with the same names and default, and validation must agree. The modules are v1.14.0: their
// option packages are those of every v1.14 patch release up to v1.14.3, and the AWS provider's v1.14.1 requires a
// pre-release of the core the module proxy does not serve. The settings Karpenter v1.15 added are checked against a
// list written from its source (core v1.15.0, AWS provider v1.15.2), since those modules need a newer Go toolchain
// than this project builds with. It also checks Dovetail's event reasons, Drifted condition reasons and disruption
// metric reasons against the constants of Karpenter v1.14's packages (events_test.go). It is a nested module so the
// main module never depends on Karpenter.
package settings
