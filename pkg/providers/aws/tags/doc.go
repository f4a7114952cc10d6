// Package tags builds the AWS tags Dovetail puts on what it creates (instances, volumes, launch templates,
// instance profiles) and decides, from an object's tags, whether it belongs to this cluster.
package tags
