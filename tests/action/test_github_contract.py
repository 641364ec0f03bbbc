"""The contract checker itself rejects what GitHub would reject."""

from __future__ import annotations

import json

import pytest

from fakes.github_contract import check, check_answer, spec_version

pytestmark = pytest.mark.unit


def test_spec_is_the_vendored_version() -> None:
    assert spec_version() == "23.0.2"


def test_accepts_conforming_requests() -> None:
    assert check("GET", "/repos/a/b/issues/7/events", {"per_page": ["100"]}, b"") == []
    body = json.dumps({"body": "hi"}).encode()
    assert check("POST", "/repos/a/b/issues/7/comments", {}, body) == []


def test_rejects_unknown_paths_methods_params_and_bodies() -> None:
    assert "no such path" in check("GET", "/repos/a/b/nope", {}, b"")[0]
    assert "method not allowed" in check("DELETE", "/repos/a/b/pulls/7", {}, b"")[0]
    assert "not an integer" in check("GET", "/repos/a/b/pulls/x", {}, b"")[0]
    assert (
        "not an integer"
        in check("GET", "/repos/a/b/issues/7/events", {"per_page": ["lots"]}, b"")[0]
    )
    problems = check(
        "POST",
        "/repos/a/b/check-runs",
        {},
        json.dumps({"name": "x", "head_sha": "y", "conclusion": "great"}).encode(),
    )
    assert any("conclusion" in p for p in problems)
    many = [
        {"path": "a", "start_line": 1, "end_line": 1, "annotation_level": "failure", "message": "m"}
    ] * 51
    problems = check(
        "POST",
        "/repos/a/b/check-runs",
        {},
        json.dumps(
            {
                "name": "x",
                "head_sha": "y",
                "output": {"title": "t", "summary": "s", "annotations": many},
            }
        ).encode(),
    )
    assert any("annotations" in p for p in problems)
    assert check("POST", "/repos/a/b/issues/7/comments", {}, b"{}") != []


def test_graphql_queries_are_checked_against_githubs_schema() -> None:
    def query(text: str) -> bytes:
        return json.dumps({"query": text, "variables": {}}).encode()

    assert check("POST", "/graphql", {}, query("query { viewer { login } }")) == []
    assert check("POST", "/graphql", {}, query("{ viewer { login databaseId } }")) == []
    unknown = check("POST", "/graphql", {}, query("query { viewer { slug } }"))
    assert unknown and "Cannot query field 'slug' on type 'User'" in unknown[0]
    assert check("POST", "/graphql", {}, query("query { viewer {")) != []
    assert check("GET", "/graphql", {}, b"") != []
    assert check("GET", "/user", {}, b"") == [], "GET /user is in the REST description"


def test_review_requests_are_checked_against_githubs_schema() -> None:
    review = {
        "commit_id": "a" * 40,
        "event": "COMMENT",
        "body": "b",
        "comments": [{"path": "p.md", "line": 3, "side": "RIGHT", "body": "c"}],
    }
    assert check("POST", "/repos/a/b/pulls/7/reviews", {}, json.dumps(review).encode()) == []
    review["event"] = "COMMENTED"
    review["comments"] = [{"line": 3, "body": "c"}]
    problems = check("POST", "/repos/a/b/pulls/7/reviews", {}, json.dumps(review).encode())
    assert any("event" in p for p in problems) and any("'path'" in p for p in problems)
    edit = json.dumps({"body": "new"}).encode()
    assert check("PATCH", "/repos/a/b/pulls/comments/9", {}, edit) == []
    assert check("PATCH", "/repos/a/b/pulls/comments/9", {}, b"{}") != []


def test_an_answer_is_checked_against_the_schema_github_documents_for_it() -> None:
    listed = "/repos/a/b/pulls/7/comments"
    assert check_answer("GET", listed, 200, []) == []
    problems = check_answer("GET", listed, 200, [{"id": 1, "body": "b"}])
    assert any("'path' is a required property" in p for p in problems)
    assert check_answer("GET", listed, 404, {"message": "Not Found"}) == []
    assert check_answer("GET", "/repos/a/b/pulls/7", 200, {}) == [], "no schema vendored"
