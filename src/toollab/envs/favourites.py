"""Favourites and votes: a REST-like image API in the style of The Cat API.

A seeded catalogue of images (with breeds and categories), a list of favourites and a list of
votes.  Searches and listings are read-only and logged like the weather queries; adding and
deleting favourites and votes change the state.  As upstream, deleting a favourite that does not
exist, or adding a favourite twice, is an error (the request fails).
"""

from __future__ import annotations

import random
from typing import Annotated, Any, ClassVar, Literal

from toollab.envs.base import (
    BAD_VALUE,
    NOT_FOUND,
    EnvError,
    Environment,
    QueryLog,
    register_env,
)
from toollab.envs.taskset import TaskSet
from toollab.tools.decorator import Param, tool

BREEDS = {
    "abys": "Abyssinian",
    "beng": "Bengal",
    "bomb": "Bombay",
    "mcoo": "Maine Coon",
    "pers": "Persian",
    "sfol": "Scottish Fold",
    "siam": "Siamese",
    "sphy": "Sphynx",
}
CATEGORIES = {
    1: "hats",
    2: "space",
    3: "sunglasses",
    4: "boxes",
    5: "ties",
    6: "sinks",
    7: "clothes",
}
MIME = ("jpg", "png", "gif")
_ID_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _img(image: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": image["id"],
        "breed_id": image["breed_id"],
        "category_id": image["category_id"],
        "mime_type": image["mime_type"],
    }


@register_env("favourites")
class FavouritesEnv(Environment):
    description = "Search cat images, keep favourites and vote (The Cat API style)."
    scenario = "AM"
    #: the split policy of its generated data (goal templates: :mod:`toollab.envs.tasks.favourites`)
    tasks: ClassVar[TaskSet] = TaskSet("favourites", lends_goals=True)

    def reset(self, seed: int = 0) -> None:
        self.seed = seed
        rng = random.Random(f"favourites:{seed}")
        self.images: list[dict[str, Any]] = []
        for _ in range(40):
            self.images.append(
                {
                    "id": "".join(rng.choice(_ID_CHARS) for _ in range(9)),
                    "breed_id": rng.choice(list(BREEDS)),
                    "category_id": rng.choice(list(CATEGORIES)),
                    "mime_type": rng.choice(MIME),
                }
            )
        self.by_id = {im["id"]: im for im in self.images}
        self.next_fav = 232000 + rng.randrange(1000) * 10
        self.next_vote = 870000 + rng.randrange(1000) * 10
        self.favourites: dict[int, dict[str, Any]] = {}
        self.votes: dict[int, dict[str, Any]] = {}
        for im in rng.sample(self.images, 5):
            self._add_fav(im["id"], "me")
        for im in rng.sample(self.images, 3):
            self._add_vote(im["id"], rng.choice([1, -1]), "me")
        self.log = QueryLog()

    def _add_fav(self, image_id: str, sub_id: str) -> int:
        fid = self.next_fav
        self.next_fav += 1
        self.favourites[fid] = {"id": fid, "image_id": image_id, "sub_id": sub_id}
        return fid

    def _add_vote(self, image_id: str, value: int, sub_id: str) -> int:
        vid = self.next_vote
        self.next_vote += 1
        self.votes[vid] = {"id": vid, "image_id": image_id, "value": value, "sub_id": sub_id}
        return vid

    def state(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for fav in self.favourites.values():
            out[f"favourite:{fav['image_id']}"] = fav["sub_id"]
        for v in self.votes.values():
            out[f"vote:{v['image_id']}"] = v["value"]
        out.update(self.log.flat("query."))
        return out

    def _image(self, image_id: str) -> dict[str, Any]:
        if image_id not in self.by_id:
            raise EnvError(f"no image with id {image_id!r}", NOT_FOUND)
        return self.by_id[image_id]

    # -- tools ---------------------------------------------------------------------------------
    @tool(returns=False)
    def search_images(
        self,
        limit: Annotated[int, Param(minimum=1, maximum=25)] = 1,
        breed_id: Annotated[
            Literal["abys", "beng", "bomb", "mcoo", "pers", "sfol", "siam", "sphy"] | None,
            Param(optional=True),
        ] = None,
        category_id: Annotated[Literal[1, 2, 3, 4, 5, 6, 7] | None, Param(optional=True)] = None,
        mime_type: Annotated[Literal["jpg", "png", "gif"] | None, Param(optional=True)] = None,
        order: Literal["RANDOM", "ASC", "DESC"] = "RANDOM",
    ) -> dict[str, Any]:
        """Search images with filters.

        Args:
            breed_id: abys=Abyssinian, beng=Bengal, bomb=Bombay, mcoo=Maine Coon, pers=Persian, sfol=Scottish Fold, siam=Siamese, sphy=Sphynx
            category_id: 1=hats, 2=space, 3=sunglasses, 4=boxes, 5=ties, 6=sinks, 7=clothes
        """
        hits = [
            im
            for im in self.images
            if (breed_id is None or im["breed_id"] == breed_id)
            and (category_id is None or im["category_id"] == category_id)
            and (mime_type is None or im["mime_type"] == mime_type)
        ]
        if order == "ASC":
            hits.sort(key=lambda im: im["id"])
        elif order == "DESC":
            hits.sort(key=lambda im: im["id"], reverse=True)
        else:
            key = f"{self.seed}:{breed_id}:{category_id}:{mime_type}"
            random.Random(key).shuffle(hits)
        return self.log.add({"kind": "search", "images": [_img(im) for im in hits[:limit]]})

    @tool(returns=False)
    def get_image(self, image_id: str) -> dict[str, Any]:
        """One image by id."""
        return self.log.add({"kind": "image", **_img(self._image(image_id))})

    @tool(returns=False)
    def list_breeds(self) -> dict[str, Any]:
        """All breeds with their ids."""
        return self.log.add(
            {"kind": "breeds", "breeds": [{"id": k, "name": v} for k, v in BREEDS.items()]}
        )

    @tool(returns=False)
    def list_categories(self) -> dict[str, Any]:
        """All categories with their ids."""
        return self.log.add(
            {
                "kind": "categories",
                "categories": [{"id": k, "name": v} for k, v in CATEGORIES.items()],
            }
        )

    @tool(returns=False)
    def list_favourites(
        self, sub_id: Annotated[str | None, Param(optional=True)] = None
    ) -> dict[str, Any]:
        """Your favourite images.

        Args:
            sub_id: Your user tag.
        """
        favs = [f for f in self.favourites.values() if sub_id is None or f["sub_id"] == sub_id]
        return self.log.add({"kind": "favourites", "sub_id": sub_id, "favourites": favs})

    @tool(returns=False)
    def add_favourite(
        self, image_id: str, sub_id: Annotated[str, Param(optional=True)] = "me"
    ) -> dict[str, Any]:
        """Add an image to your favourites.

        Args:
            sub_id: Your user tag.
        """
        self._image(image_id)
        if any(f["image_id"] == image_id for f in self.favourites.values()):
            raise EnvError(
                f"image {image_id!r} is already a favourite (DUPLICATE_FAVOURITE)", BAD_VALUE
            )
        return {"message": "SUCCESS", "id": self._add_fav(image_id, sub_id)}

    @tool(returns=False)
    def delete_favourite(self, favourite_id: int) -> dict[str, Any]:
        """Remove a favourite by its favourite id."""
        if favourite_id not in self.favourites:
            raise EnvError(f"no favourite with id {favourite_id}", NOT_FOUND)
        del self.favourites[favourite_id]
        return {"message": "SUCCESS"}

    @tool(returns=False)
    def vote(
        self,
        image_id: str,
        value: Literal[1, -1],
        sub_id: Annotated[str, Param(optional=True)] = "me",
    ) -> dict[str, Any]:
        """Vote an image up (1) or down (-1).

        Args:
            sub_id: Your user tag.
        """
        self._image(image_id)
        for vid, v in list(self.votes.items()):
            if v["image_id"] == image_id:
                del self.votes[vid]
        return {"message": "SUCCESS", "id": self._add_vote(image_id, value, sub_id)}

    @tool(returns=False)
    def list_votes(
        self, sub_id: Annotated[str | None, Param(optional=True)] = None
    ) -> dict[str, Any]:
        """Your votes.

        Args:
            sub_id: Your user tag.
        """
        votes = [v for v in self.votes.values() if sub_id is None or v["sub_id"] == sub_id]
        return self.log.add({"kind": "votes", "sub_id": sub_id, "votes": votes})

    @tool(returns=False)
    def delete_vote(self, vote_id: int) -> dict[str, Any]:
        """Remove a vote by its vote id."""
        if vote_id not in self.votes:
            raise EnvError(f"no vote with id {vote_id}", NOT_FOUND)
        del self.votes[vote_id]
        return {"message": "SUCCESS"}
