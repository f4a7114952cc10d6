module github.com/dovetail/dovetail/test/karpentercrds

go 1.26.0

require sigs.k8s.io/yaml v1.6.0

require (
	github.com/google/go-cmp v0.7.0 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
)
