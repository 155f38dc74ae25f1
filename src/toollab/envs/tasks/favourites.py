"""Favourites and votes goal templates (The Cat API style)."""

from __future__ import annotations

import random
from typing import Any

from toollab.envs.base import Environment
from toollab.envs.favourites import BREEDS, CATEGORIES, FavouritesEnv
from toollab.envs.tasks.common import Goal, call, pick, with_article

TASKS = FavouritesEnv.tasks
SUB_IDS = ("alex", "sam", "kim", "lee", "max")


def _env(env: Environment) -> FavouritesEnv:
    if not isinstance(env, FavouritesEnv):
        raise TypeError("favourites templates need a FavouritesEnv")
    return env


def _new_image(rng: random.Random, env: FavouritesEnv) -> str:
    taken = {f["image_id"] for f in env.favourites.values()}
    free = [im["id"] for im in env.images if im["id"] not in taken]
    return pick(rng, free)


def _sub(rng: random.Random) -> tuple[str, dict[str, Any]]:
    if rng.random() < 0.3:
        s = pick(rng, SUB_IDS)
        return f" under the user tag {s}", {"sub_id": s}
    return "", {}


@TASKS.template("add_favourite", weight=2)
def add_favourite(rng: random.Random, env: Environment) -> Goal:
    img = _new_image(rng, _env(env))
    text, args = _sub(rng)
    q = pick(
        rng,
        [
            f"Add the cat photo with id {img} to my list of favourites{text}.",
            f"Save image {img} as a favourite{text}.",
            f"Favourite the image {img}{text}.",
        ],
    )
    return Goal(query=q, calls=[call("add_favourite", image_id=img, **args)])


@TASKS.template("delete_favourite", weight=2)
def delete_favourite(rng: random.Random, env: Environment) -> Goal:
    fid = pick(rng, [str(k) for k in _env(env).favourites])
    q = pick(
        rng,
        [
            f"Remove favourite {fid} from my favourites.",
            f"Delete the favourite with id {fid}.",
            f"Un-favourite {fid}, please.",
        ],
    )
    return Goal(query=q, calls=[call("delete_favourite", favourite_id=int(fid))])


@TASKS.template("list_favourites")
def list_favourites(rng: random.Random, env: Environment) -> Goal:
    _text, args = _sub(rng)
    if args:
        return Goal(
            query=f"Show the favourite images saved under the user tag {args['sub_id']}.",
            calls=[call("list_favourites", **args)],
        )
    return Goal(
        query=pick(rng, ["Show my favourite images.", "List all my favourites."]),
        calls=[call("list_favourites")],
    )


@TASKS.template("vote", weight=2)
def vote(rng: random.Random, env: Environment) -> Goal:
    fe = _env(env)
    img = pick(rng, [im["id"] for im in fe.images])
    up = rng.random() < 0.5
    if any(v["image_id"] == img and v["value"] == (1 if up else -1) for v in fe.votes.values()):
        up = not up  # the same vote again would change nothing
    text, args = _sub(rng)
    q = (
        pick(
            rng,
            [f"Vote up the image {img}{text}.", f"I love image {img}, give it an upvote{text}."],
        )
        if up
        else pick(
            rng,
            [f"Vote down the image {img}{text}.", f"I don't like image {img}; downvote it{text}."],
        )
    )
    return Goal(query=q, calls=[call("vote", image_id=img, value=1 if up else -1, **args)])


@TASKS.template("list_votes")
def list_votes(rng: random.Random, env: Environment) -> Goal:
    return Goal(
        query=pick(rng, ["Show all my votes.", "Which images have I voted on?"]),
        calls=[call("list_votes")],
    )


@TASKS.template("delete_vote")
def delete_vote(rng: random.Random, env: Environment) -> Goal:
    vid = pick(rng, [str(k) for k in _env(env).votes])
    return Goal(query=f"Delete my vote {vid}.", calls=[call("delete_vote", vote_id=int(vid))])


@TASKS.template("search", weight=2)
def search(rng: random.Random, env: Environment) -> Goal:
    args: dict[str, Any] = {}
    n = rng.choice([1, 2, 3, 5, 10])
    if n != 1:
        args["limit"] = n
    kind = "image"
    if rng.random() < 0.3:
        args["mime_type"] = "gif"
        kind = "animated (gif) image"
    what = with_article(kind) if n == 1 else f"{n} {kind}s"
    if rng.random() < 0.6:
        bid = pick(rng, list(BREEDS))
        args["breed_id"] = bid
        what += f" of {BREEDS[bid]} cats"
    else:
        what = what.replace("image", "cat image")
    if rng.random() < 0.5:
        cid = pick(rng, [str(k) for k in CATEGORIES])
        args["category_id"] = int(cid)
        what += f" in the {CATEGORIES[int(cid)]} category"
    if rng.random() < 0.3:
        args["order"] = pick(rng, ["ASC", "DESC"])
        what += ", sorted by id " + ("ascending" if args["order"] == "ASC" else "descending")
    return Goal(query=f"Find {what}.", calls=[call("search_images", **args)])


@TASKS.template("get_image")
def get_image(rng: random.Random, env: Environment) -> Goal:
    img = pick(rng, [im["id"] for im in _env(env).images])
    return Goal(
        query=f"Show me the details of image {img}.", calls=[call("get_image", image_id=img)]
    )


@TASKS.template("list_catalogue")
def list_catalogue(rng: random.Random, env: Environment) -> Goal:
    if rng.random() < 0.5:
        return Goal(query="Which cat breeds are there?", calls=[call("list_breeds")])
    return Goal(query="List the image categories.", calls=[call("list_categories")])


@TASKS.template("favourite_and_vote", atomic=False)
def favourite_and_vote(rng: random.Random, env: Environment) -> Goal:
    img = _new_image(rng, _env(env))
    return Goal(
        query=f"Add image {img} to my favourites and vote it up.",
        calls=[call("add_favourite", image_id=img), call("vote", image_id=img, value=1)],
    )


@TASKS.template("swap_favourite", atomic=False)
def swap_favourite(rng: random.Random, env: Environment) -> Goal:
    e = _env(env)
    fid = pick(rng, [str(k) for k in e.favourites])
    img = _new_image(rng, e)
    return Goal(
        query=f"Replace favourite {fid} with image {img}.",
        calls=[
            call("delete_favourite", favourite_id=int(fid)),
            call("add_favourite", image_id=img),
        ],
    )


@TASKS.template("breed_lookup", atomic=False)
def breed_lookup(rng: random.Random, env: Environment) -> Goal:
    bid = pick(rng, list(BREEDS))
    return Goal(
        query=f"List the cat breeds, then find 3 images of {BREEDS[bid]} cats.",
        calls=[call("list_breeds"), call("search_images", breed_id=bid, limit=3)],
    )


@TASKS.template("clear_vote", atomic=False)
def clear_vote(rng: random.Random, env: Environment) -> Goal:
    vid = pick(rng, [str(k) for k in _env(env).votes])
    return Goal(
        query=f"Show my votes, then delete vote {vid}.",
        calls=[call("list_votes"), call("delete_vote", vote_id=int(vid))],
    )


TASKS.add_composition(weight=5)
