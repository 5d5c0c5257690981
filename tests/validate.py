#!/usr/bin/python3
"""Validate tinspect JSON output against a schema.

    validate.py SCHEMA FILE...

Each FILE holds one JSON document, or one per line (NDJSON: lines end at
"\n" only; U+2028 and the like are no line ends in JSON text).  Exit 0 if
every document of every file is valid, 1 otherwise (the first errors are
printed, and "FILE: invalid" on stdout for each file that is not).  A line
with "kind" (a --watch summary or event line) is checked against
tinspect-stream.schema.json from SCHEMA's directory, one with "kind": "diff"
(tinspect --diff --json) against tinspect-diff.schema.json, one with "kind":
"lock_order" (a --lock-order FILE) against tinspect-lockorder.schema.json.
Uses Debian's
python3-jsonschema (Draft 2020-12).
"""
import json
import os
import sys

import jsonschema


def main():
    schema_path, doc_paths = sys.argv[1], sys.argv[2:]
    with open(schema_path) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    stream_path = os.path.join(os.path.dirname(schema_path),
                               "tinspect-stream.schema.json")
    with open(stream_path) as f:
        stream_schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(stream_schema)
    stream = jsonschema.Draft202012Validator(stream_schema)
    with open(os.path.join(os.path.dirname(schema_path),
                           "tinspect-diff.schema.json")) as f:
        diff_schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(diff_schema)
    diff = jsonschema.Draft202012Validator(diff_schema)
    with open(os.path.join(os.path.dirname(schema_path),
                           "tinspect-lockorder.schema.json")) as f:
        lockorder_schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(lockorder_schema)
    lockorder = jsonschema.Draft202012Validator(lockorder_schema)
    others = {"diff": diff, "lock_order": lockorder}
    bad = 0
    for path in doc_paths:
        if check(path, validator, stream, others):
            print(f"{path}: invalid")
            bad += 1
    return 1 if bad else 0


def check(doc_path, validator, stream, others):
    with open(doc_path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError as e:
        print(f"{doc_path}: not UTF-8: {e}", file=sys.stderr)
        return 1
    text = text.strip()
    docs = [text] if text.startswith("{") and "\n{" not in text else text.split("\n")
    bad = 0
    for i, line in enumerate(docs):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError as e:
            print(f"{doc_path}: document {i}: not JSON: {e}", file=sys.stderr)
            return 1
        kind = doc.get("kind") if isinstance(doc, dict) else None
        v = others.get(kind) or (stream if kind else validator)
        errors = sorted(v.iter_errors(doc), key=lambda e: list(e.path))
        for e in errors[:5]:
            print(f"{doc_path}: document {i}: {'/'.join(map(str, e.path))}: {e.message}",
                  file=sys.stderr)
        bad += bool(errors)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
