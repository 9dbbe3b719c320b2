"""The local control plane (`kaos up`): the operator's twin on one machine. It validates and
reconciles the same resources with the same core, renders the same workload charts with
helm template, runs each rendered Deployment as a supervised process and serves the
cluster's URL layout through a local gateway."""
