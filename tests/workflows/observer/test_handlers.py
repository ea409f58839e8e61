"""Both observer workflows answer under the names their activities and the watching workflows call, and their
`watch` signal decodes into their own watch type (the handlers they share are declared once,
workflows/observer/book_observer.py, under the Ray job observer's names)."""

from __future__ import annotations

import pytest
from temporalio import workflow

from wire.kubernetes_observer import (
    KUBE_OBSERVER_WORKFLOW,
    KUBE_UNWATCH_KEYS_SIGNAL,
    KUBE_UNWATCH_SIGNAL,
    KUBE_WATCH_SIGNAL,
    KUBE_WATCHES_QUERY,
    ObjectWatch,
)
from wire.observer import (
    OBSERVER_WORKFLOW,
    UNWATCH_KEYS_SIGNAL,
    UNWATCH_SIGNAL,
    WATCH_SIGNAL,
    WATCHES_QUERY,
    WORKER_STARTED_SIGNAL,
    JobWatch,
)
from workflows.observer.kubernetes import KubernetesObserverWorkflow
from workflows.observer.workflow import RayJobObserverWorkflow


@pytest.mark.parametrize(
    ("observer", "name", "watch", "unwatch", "unwatch_keys", "query", "watch_type"),
    [
        (
            RayJobObserverWorkflow,
            OBSERVER_WORKFLOW,
            WATCH_SIGNAL,
            UNWATCH_SIGNAL,
            UNWATCH_KEYS_SIGNAL,
            WATCHES_QUERY,
            JobWatch,
        ),
        (
            KubernetesObserverWorkflow,
            KUBE_OBSERVER_WORKFLOW,
            KUBE_WATCH_SIGNAL,
            KUBE_UNWATCH_SIGNAL,
            KUBE_UNWATCH_KEYS_SIGNAL,
            KUBE_WATCHES_QUERY,
            ObjectWatch,
        ),
    ],
    ids=["ray jobs", "kubernetes"],
)
def test_an_observer_answers_its_wire_names(
    observer: type, name: str, watch: str, unwatch: str, unwatch_keys: str, query: str, watch_type: type
) -> None:
    definition = workflow._Definition.must_from_class(observer)
    assert definition.name == name
    assert set(definition.signals) == {watch, unwatch, unwatch_keys, WORKER_STARTED_SIGNAL}
    assert set(definition.queries) == {query}
    assert definition.signals[watch].arg_types == [watch_type]
    assert definition.signals[unwatch_keys].arg_types == [list[str]]
