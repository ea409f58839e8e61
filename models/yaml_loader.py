"""YAML read as the Go side reads it: Kubernetes' sigs.k8s.io/yaml (manifests, serveConfigV2) and
go-yaml into an untyped value (KubeRay's runtimeEnvYAML) both leave a timestamp the string it is written
as, where PyYAML's safe loader would build a datetime."""

from __future__ import annotations

import yaml


class StringTimestampLoader(yaml.SafeLoader):
    """PyYAML's safe loader (it builds no objects) minus timestamp resolution: dates stay strings."""


StringTimestampLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
