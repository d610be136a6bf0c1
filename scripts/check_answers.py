#!/usr/bin/env python3
"""Checks recorded answers of the running API against docs/openapi.json.

usage: check_answers.py openapi.json answers.json
answers.json: [{"method": "post", "path": "/admin/v1/users/abc?limit=2", "status": 200, "body": <JSON or null>}, ...]
(concrete paths: each is matched to its documented template, a literal path before one with parameters)
Every answer's status must be documented for its operation, and a body must match the documented JSON schema
(draft 2020-12, as OpenAPI 3.1 uses). Prints "skip" and exits 0 when the jsonschema package is missing.
"""
import json
import sys

try:
    from jsonschema import Draft202012Validator
except ImportError:
    print("skip: pip install jsonschema")
    sys.exit(0)

spec = json.load(open(sys.argv[1]))
answers = json.load(open(sys.argv[2]))


def resolve(node):
    while isinstance(node, dict) and "$ref" in node and node["$ref"].startswith("#/components/responses/"):
        node = spec["components"]["responses"][node["$ref"].split("/")[-1]]
    return node


import re

templates = sorted(spec["paths"], key=lambda t: t.count("{"))


def template(path):
    path = path.split("?")[0]
    for candidate in templates:
        if re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", candidate), path):
            return candidate
    return path


problems = []
checked = 0
for answer in answers:
    path = template(answer["path"])
    where = f'{answer["method"].upper()} {path} → {answer["status"]}'
    operation = spec["paths"].get(path, {}).get(answer["method"])
    if operation is None:
        problems.append(f"{where}: operation not documented")
        continue
    response = resolve(operation.get("responses", {}).get(str(answer["status"])))
    if response is None:
        problems.append(f"{where}: status not documented")
        continue
    schema = response.get("content", {}).get("application/json", {}).get("schema")
    if schema is None:
        if answer["body"] not in (None, ""):
            problems.append(f"{where}: a body is answered but none is documented")
        continue
    validator = Draft202012Validator({"$ref": "#/$defs/answer", "$defs": {"answer": schema}, "components": spec["components"]})
    errors = sorted(validator.iter_errors(answer["body"]), key=lambda e: list(e.path))
    for error in errors[:3]:
        problems.append(f"{where}: {'/'.join(map(str, error.path)) or '(body)'}: {error.message}")
    checked += 1

for problem in problems:
    print(problem)
print(f"checked {checked} bodies of {len(answers)} answers; {len(problems)} problems")
sys.exit(1 if problems else 0)
