#!/usr/bin/python3
"""Extract the part of the controllers' CRD schemas that docs/rollouts.md's
manifests use, for TestRolloutManifests.

Usage (from the repository root, with the upstream CRD files at hand):

  /usr/bin/python3 cmd/goodput/testdata/rollouts/make_schemas.py \
      ANALYSIS_TEMPLATE_CRD.yaml FLAGGER_CRD.yaml > cmd/goodput/testdata/rollouts/schemas.json

Inputs used for the committed schemas.json:
  argoproj/argo-rollouts manifests/crds/analysis-template-crd.yaml at 9f8d111d8f8e3e88b6d7f8bbdf62fd3cd863ef9d (v1alpha1)
  fluxcd/flagger artifacts/flagger/crd.yaml at 15bd6ad555e6c935da55f0ab95977be74c149bd6 (Canary v1beta1)

Every object level a manifest reaches keeps the names and types of all its
properties (so a misspelt or misplaced key is caught) and its required list;
subtrees no manifest reaches are cut to their type and marked x-pruned.
Descriptions are dropped. Re-run after adding a manifest that reaches
deeper.
"""
import json
import re
import sys

import yaml

KEEP = ("type", "required", "enum", "x-kubernetes-int-or-string", "format")


def shallow(s):
    out = {k: s[k] for k in KEEP if k in s}
    if "anyOf" in s:
        out["anyOf"] = [{k: a[k] for k in ("type",) if k in a} for a in s["anyOf"]]
    if "properties" in s or "items" in s or "additionalProperties" in s:
        out["x-pruned"] = True
    return out


def prune(s, v):
    out = shallow(s)
    out.pop("x-pruned", None)
    if isinstance(v, dict):
        if "properties" in s:
            out["properties"] = {k: (prune(p, v[k]) if k in v else shallow(p)) for k, p in s["properties"].items()}
        if isinstance(s.get("additionalProperties"), dict):
            ap = s["additionalProperties"]
            merged = shallow(ap)
            for val in v.values():
                merged = union(merged, prune(ap, val))
            out["additionalProperties"] = merged
        elif s.get("additionalProperties") is True:
            out["additionalProperties"] = True
    elif isinstance(v, list) and "items" in s:
        items = shallow(s["items"])
        merged = None
        for val in v:
            p = prune(s["items"], val)
            merged = p if merged is None else union(merged, p)
        out["items"] = merged if merged is not None else items
    return out


def union(a, b):
    """Merge two pruned schemas of the same source (b's deeper parts win)."""
    if a.get("x-pruned") and not b.get("x-pruned"):
        return b
    if b.get("x-pruned"):
        return a
    out = dict(a)
    if "properties" in a and "properties" in b:
        out["properties"] = {k: union(a["properties"][k], b["properties"][k]) for k in a["properties"]}
    if "items" in a and "items" in b:
        out["items"] = union(a["items"], b["items"])
    if isinstance(a.get("additionalProperties"), dict) and isinstance(b.get("additionalProperties"), dict):
        out["additionalProperties"] = union(a["additionalProperties"], b["additionalProperties"])
    return out


def crd_schemas(path):
    out = {}
    for d in yaml.safe_load_all(open(path)):
        if not d or d.get("kind") != "CustomResourceDefinition":
            continue
        kind = d["spec"]["names"]["kind"]
        for v in d["spec"]["versions"]:
            out[(d["spec"]["group"] + "/" + v["name"], kind)] = v["schema"]["openAPIV3Schema"]
    return out


def manifests():
    text = open("docs/rollouts.md").read()
    for block in re.findall(r"```yaml\n(.*?)```", text, re.S):
        yield yaml.safe_load(block)


def main():
    schemas = {}
    for p in sys.argv[1:]:
        schemas.update(crd_schemas(p))
    out = {}
    for m in manifests():
        key = (m["apiVersion"], m["kind"])
        name = m["apiVersion"] + " " + m["kind"]
        p = prune(schemas[key], m)
        out[name] = union(out[name], p) if name in out else p
    print(json.dumps(out, indent=1, sort_keys=True))


main()
