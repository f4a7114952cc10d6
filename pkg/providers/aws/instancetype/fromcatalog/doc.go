// Package fromcatalog converts pkg/catalog instance types to instancetype.Info, so offline tools such as
// `dovetailctl simulate` compute node capacity with the controller's arithmetic. It is a separate package so the
// controller binary does not link the embedded catalog.
package fromcatalog
