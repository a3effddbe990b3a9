"""The capacity model (bench.scale.model) on the committed scale run: it must still
predict the points it was not fitted on within its bar, and the manifests' autoscaling
must be the figures it derives (docs/scaling.md)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.scale import model
from tests.deploy.manifests import k8s_object

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "scale.json"


def test_the_model_predicts_every_point_it_was_not_fitted_on_within_its_bar() -> None:
    assert model.main(["--results", str(RESULTS)]) == 0


def test_the_api_scales_at_the_models_planned_utilisation() -> None:
    hpa = k8s_object("HorizontalPodAutoscaler", "threadfold-api")["spec"]
    (metric,) = hpa["metrics"]
    target = metric["resource"]["target"]["averageUtilization"]
    assert target == round(model.PLAN_UTILISATION * 100)


def test_the_workers_threshold_is_the_models() -> None:
    costs = model.fit(json.loads(RESULTS.read_text()))
    (trigger,) = k8s_object("ScaledObject", "threadfold-worker")["spec"]["triggers"]
    assert int(trigger["metadata"]["threshold"]) == model.worker_threshold(costs)
