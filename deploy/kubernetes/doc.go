// Package kubernetes holds the manifests that run a plan as a sharded run on
// Kubernetes (see docs/kubernetes.md): pvc.yaml (the results volume),
// configmap.yaml (the plan, its files, the run's id and start instant),
// shards.yaml (an Indexed Job, one pod per shard) and merge.yaml (the Job
// that merges the shards). Its tests decode every manifest strictly into
// the Kubernetes API types and check that the pieces fit together; the
// package has no code of its own.
package kubernetes
