"""ToolEyes scenario *information retrieval* (IR): a bundled catalogue of books, countries,
words and recipes.  Every tool reads it; the state is the sorted list of responses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, ClassVar, Literal

from toollab.envs.base import NOT_FOUND, EnvError, Environment, QueryLog, register_env
from toollab.envs.taskset import TaskSet
from toollab.tools.decorator import Param, tool

#: id, title, author, year, genre
BOOKS: list[tuple[str, str, str, int, str]] = [
    ("B001", "Pride and Prejudice", "Jane Austen", 1813, "romance"),
    ("B002", "Emma", "Jane Austen", 1815, "romance"),
    ("B003", "Moby-Dick", "Herman Melville", 1851, "adventure"),
    ("B004", "Great Expectations", "Charles Dickens", 1861, "drama"),
    ("B005", "Oliver Twist", "Charles Dickens", 1838, "drama"),
    ("B006", "Frankenstein", "Mary Shelley", 1818, "horror"),
    ("B007", "Dracula", "Bram Stoker", 1897, "horror"),
    ("B008", "The Time Machine", "H. G. Wells", 1895, "science fiction"),
    ("B009", "The War of the Worlds", "H. G. Wells", 1898, "science fiction"),
    ("B010", "Treasure Island", "Robert Louis Stevenson", 1883, "adventure"),
    ("B011", "Jane Eyre", "Charlotte Bronte", 1847, "romance"),
    ("B012", "Wuthering Heights", "Emily Bronte", 1847, "romance"),
    ("B013", "Little Women", "Louisa May Alcott", 1868, "drama"),
    ("B014", "Around the World in Eighty Days", "Jules Verne", 1872, "adventure"),
    ("B015", "Twenty Thousand Leagues Under the Seas", "Jules Verne", 1870, "science fiction"),
    ("B016", "The Adventures of Sherlock Holmes", "Arthur Conan Doyle", 1892, "mystery"),
    ("B017", "The Hound of the Baskervilles", "Arthur Conan Doyle", 1902, "mystery"),
    ("B018", "The Picture of Dorian Gray", "Oscar Wilde", 1890, "drama"),
]
GENRES = sorted({b[4] for b in BOOKS})
COUNTRIES: dict[str, dict[str, Any]] = {
    "France": {
        "capital": "Paris",
        "population_millions": 68.2,
        "currency": "EUR",
        "language": "French",
        "continent": "Europe",
    },
    "Japan": {
        "capital": "Tokyo",
        "population_millions": 124.5,
        "currency": "JPY",
        "language": "Japanese",
        "continent": "Asia",
    },
    "Brazil": {
        "capital": "Brasilia",
        "population_millions": 203.1,
        "currency": "BRL",
        "language": "Portuguese",
        "continent": "South America",
    },
    "Canada": {
        "capital": "Ottawa",
        "population_millions": 40.1,
        "currency": "CAD",
        "language": "English, French",
        "continent": "North America",
    },
    "Kenya": {
        "capital": "Nairobi",
        "population_millions": 55.1,
        "currency": "KES",
        "language": "Swahili, English",
        "continent": "Africa",
    },
    "Australia": {
        "capital": "Canberra",
        "population_millions": 26.6,
        "currency": "AUD",
        "language": "English",
        "continent": "Oceania",
    },
    "Germany": {
        "capital": "Berlin",
        "population_millions": 84.5,
        "currency": "EUR",
        "language": "German",
        "continent": "Europe",
    },
    "India": {
        "capital": "New Delhi",
        "population_millions": 1428.6,
        "currency": "INR",
        "language": "Hindi, English",
        "continent": "Asia",
    },
    "Mexico": {
        "capital": "Mexico City",
        "population_millions": 128.5,
        "currency": "MXN",
        "language": "Spanish",
        "continent": "North America",
    },
    "Egypt": {
        "capital": "Cairo",
        "population_millions": 112.7,
        "currency": "EGP",
        "language": "Arabic",
        "continent": "Africa",
    },
    "Norway": {
        "capital": "Oslo",
        "population_millions": 5.5,
        "currency": "NOK",
        "language": "Norwegian",
        "continent": "Europe",
    },
    "Peru": {
        "capital": "Lima",
        "population_millions": 34.4,
        "currency": "PEN",
        "language": "Spanish",
        "continent": "South America",
    },
}
FACT_FIELDS = ("capital", "population_millions", "currency", "language", "continent")
WORDS = {
    "ephemeral": "lasting for a very short time",
    "ubiquitous": "present, appearing or found everywhere",
    "serendipity": "the occurrence of events by chance in a happy way",
    "meticulous": "showing great attention to detail",
    "resilient": "able to recover quickly from difficulties",
    "candid": "truthful and straightforward",
    "frugal": "sparing or economical with money or food",
    "verbose": "using more words than needed",
    "lucid": "expressed clearly; easy to understand",
    "tenacious": "keeping a firm hold; persistent",
}
#: name, main ingredient, minutes
RECIPES = [
    ("Tomato soup", "tomato", 30),
    ("Caprese salad", "tomato", 10),
    ("Shakshuka", "egg", 25),
    ("Omelette", "egg", 10),
    ("Chicken curry", "chicken", 45),
    ("Roast chicken", "chicken", 90),
    ("Mushroom risotto", "rice", 40),
    ("Fried rice", "rice", 20),
    ("Banana bread", "banana", 70),
    ("Smoothie bowl", "banana", 5),
    ("Lentil stew", "lentils", 50),
    ("Dal", "lentils", 35),
]
INGREDIENTS = sorted({r[1] for r in RECIPES})


def _book(b: tuple[str, str, str, int, str]) -> dict[str, Any]:
    return {"id": b[0], "title": b[1], "author": b[2], "year": b[3], "genre": b[4]}


@register_env("info_retrieval")
class InfoRetrievalEnv(Environment):
    description = "Look things up: books, country facts, word definitions, recipes."
    scenario = "IR"
    #: the split policy of its generated data (the goal templates are in
    #: :mod:`toollab.envs.tasks.info_retrieval`)
    tasks: ClassVar[TaskSet] = TaskSet("info_retrieval", lends_goals=True)

    def reset(self, seed: int = 0) -> None:
        self.seed = seed
        self.log = QueryLog()

    def state(self) -> dict[str, Any]:
        return self.log.flat()

    @tool(returns=False)
    def search_books(
        self,
        author: Annotated[str | None, Param(optional=True)] = None,
        genre: Annotated[
            Literal["adventure", "drama", "horror", "mystery", "romance", "science fiction"] | None,
            Param(optional=True),
        ] = None,
        year_from: Annotated[int | None, Param(optional=True)] = None,
        year_to: Annotated[int | None, Param(optional=True)] = None,
        limit: Annotated[int, Param(minimum=1, maximum=10)] = 5,
    ) -> dict[str, Any]:
        """Search the book catalogue; all filters optional."""
        hits = [
            b
            for b in BOOKS
            if (author is None or author.strip().lower() in b[2].lower())
            and (genre is None or b[4] == genre)
            and (year_from is None or b[3] >= year_from)
            and (year_to is None or b[3] <= year_to)
        ]
        hits.sort(key=lambda b: (b[3], b[0]))
        return self.log.add({"kind": "books", "books": [_book(b) for b in hits[:limit]]})

    @tool(returns=False)
    def get_book(self, book_id: str) -> dict[str, Any]:
        """Details of one book by id (e.g. B003)."""
        for b in BOOKS:
            if b[0] == book_id.strip().upper():
                return self.log.add({"kind": "book", **_book(b)})
        raise EnvError(f"no book {book_id!r}", NOT_FOUND)

    @tool(returns=False)
    def get_country_facts(
        self,
        country: str,
        fields: Sequence[
            Literal["capital", "population_millions", "currency", "language", "continent"]
        ] = ("capital", "population_millions", "currency", "language", "continent"),
    ) -> dict[str, Any]:
        """Facts about a country."""
        name = next((c for c in COUNTRIES if c.lower() == country.strip().lower()), None)
        if name is None:
            raise EnvError(f"no facts for {country!r}", NOT_FOUND)
        facts: dict[str, Any] = {f: COUNTRIES[name][f] for f in FACT_FIELDS if f in set(fields)}
        return self.log.add({"kind": "country", "country": name, **facts})

    @tool(returns=False)
    def define_word(self, word: str) -> dict[str, Any]:
        """The dictionary definition of an English word."""
        w = word.strip().lower()
        if w not in WORDS:
            raise EnvError(f"{word!r} is not in the dictionary", NOT_FOUND)
        return self.log.add({"kind": "definition", "word": w, "definition": WORDS[w]})

    @tool(returns=False)
    def search_recipes(
        self,
        ingredient: Literal["banana", "chicken", "egg", "lentils", "rice", "tomato"],
        max_minutes: Annotated[int | None, Param(optional=True, minimum=1)] = None,
    ) -> dict[str, Any]:
        """Recipes with a main ingredient, optionally under a time limit."""
        hits = [
            {"name": n, "minutes": m}
            for n, i, m in RECIPES
            if i == ingredient and (max_minutes is None or m <= max_minutes)
        ]
        return self.log.add({"kind": "recipes", "ingredient": ingredient, "recipes": hits})
