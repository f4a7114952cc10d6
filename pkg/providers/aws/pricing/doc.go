// Package pricing reads hourly prices: on-demand Linux prices from the Pricing API's GetProducts and current spot
// prices per zone from EC2 DescribeSpotPriceHistory. Both are cached for a TTL measured on an injected clock.
package pricing
