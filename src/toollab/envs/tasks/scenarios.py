"""Goal templates of the seven ToolEyes-scenario environments."""

from __future__ import annotations

import random
from typing import Any

from toollab.envs.base import Environment
from toollab.envs.scenarios.data import NUMERIC, PRODUCTS
from toollab.envs.scenarios.finance import BILL_PAYEES, CATEGORIES, MONTHS, RATES, FinanceEnv
from toollab.envs.scenarios.personal import PersonalLifeEnv
from toollab.envs.scenarios.realtime import AIRLINES, CURRENCIES, STOCKS, TIMEZONES, TOPICS
from toollab.envs.scenarios.retrieval import BOOKS, COUNTRIES, GENRES, RECIPES, WORDS
from toollab.envs.scenarios.workspace import BASE_FILES
from toollab.envs.tasks.common import Task, TaskSet, call, money, pick, say_date

# -- TG: text generation -------------------------------------------------------------------------
TEXT = TaskSet("text_generation")
_PHRASES = (
    "machine learning for small devices",
    "the quick brown fox",
    "annual budget review meeting",
    "open source tool learning",
    "summer garden party invitation",
    "how to bake sourdough bread",
)
_NAMES = ("Maya", "Tom", "Priya", "Lucas", "Aiko", "Omar")


@TEXT.template("uuids")
def uuids(rng: random.Random, env: Environment) -> Task:
    n = rng.randint(1, 8)
    return Task(
        query=f"I need {n} random UUIDs for my test database.",
        calls=[call("generate_uuids", **({"count": n} if n != 1 else {}))],
    )


@TEXT.template("password")
def password(rng: random.Random, env: Environment) -> Task:
    n = rng.choice([8, 10, 12, 16, 20])
    args: dict[str, Any] = {} if n == 12 else {"length": n}
    extra = ""
    if rng.random() < 0.4:
        args["symbols"] = False
        extra = " without special symbols"
    return Task(
        query=f"Generate a {n}-character password{extra}.",
        calls=[call("generate_password", **args)],
    )


@TEXT.template("slug")
def slug(rng: random.Random, env: Environment) -> Task:
    t = pick(rng, _PHRASES).title()
    return Task(query=f'Make a URL slug for the article "{t}".', calls=[call("make_slug", text=t)])


@TEXT.template("case")
def case(rng: random.Random, env: Environment) -> Task:
    t = pick(rng, _PHRASES)
    c = pick(rng, ["upper", "title", "snake", "camel"])
    word = {
        "upper": "upper case",
        "title": "title case",
        "snake": "snake_case",
        "camel": "camelCase",
    }[c]
    return Task(query=f'Convert "{t}" to {word}.', calls=[call("change_case", text=t, case=c)])


@TEXT.template("count")
def count(rng: random.Random, env: Environment) -> Task:
    t = pick(rng, _PHRASES).capitalize() + ". " + pick(rng, _PHRASES).capitalize() + "."
    return Task(
        query=f'How many words are in this text: "{t}"', calls=[call("count_words", text=t)]
    )


@TEXT.template("acronym")
def acronym(rng: random.Random, env: Environment) -> Task:
    t = pick(rng, _PHRASES)
    return Task(query=f'What is the acronym of "{t}"?', calls=[call("make_acronym", text=t)])


@TEXT.template("lorem")
def lorem(rng: random.Random, env: Environment) -> Task:
    n = rng.randint(1, 5)
    return Task(
        query=f"Give me {n} sentence{'s' if n > 1 else ''} of placeholder text.",
        calls=[call("lorem_ipsum", **({"sentences": n} if n != 2 else {}))],
    )


@TEXT.template("greeting", weight=2)
def greeting(rng: random.Random, env: Environment) -> Task:
    name = pick(rng, _NAMES)
    occ = pick(rng, ["birthday", "wedding", "graduation", "new year", "thanks", "retirement"])
    formal = rng.random() < 0.4
    args: dict[str, Any] = {"name": name, "occasion": occ, **({"tone": "formal"} if formal else {})}
    return Task(
        query=f"Write a {'formal' if formal else 'casual'} {occ} greeting for {name}.",
        calls=[call("write_greeting", **args)],
    )


@TEXT.template("slug_and_case")
def slug_and_case(rng: random.Random, env: Environment) -> Task:
    t = pick(rng, _PHRASES)
    return Task(
        query=f'For "{t}", give me a URL slug and the title-case version.',
        calls=[call("make_slug", text=t), call("change_case", text=t, case="title")],
    )


# -- DU: data understanding ------------------------------------------------------------------------
DATA = TaskSet("data_understanding")
_STAT_WORDS = {
    "mean": "average",
    "median": "median",
    "min": "smallest",
    "max": "largest",
    "sum": "total",
    "std": "standard deviation of the",
}


@DATA.template("stat", weight=2)
def stat(rng: random.Random, env: Environment) -> Task:
    col = pick(rng, NUMERIC)
    st = pick(rng, list(_STAT_WORDS))
    return Task(
        query=f"What is the {_STAT_WORDS[st]} {col} in the sales table?",
        calls=[call("column_stat", column=col, stat=st)],
    )


@DATA.template("group", weight=2)
def group(rng: random.Random, env: Environment) -> Task:
    by = pick(rng, ["region", "product", "month"])
    col = pick(rng, ["units", "revenue"])
    agg = pick(rng, ["sum", "mean", "max"])
    word = {"sum": "total", "mean": "average", "max": "highest"}[agg]
    args: dict[str, Any] = {"group_by": by, "column": col, **({} if agg == "sum" else {"agg": agg})}
    return Task(query=f"Show the {word} {col} per {by}.", calls=[call("group_aggregate", **args)])


@DATA.template("count_rows")
def count_rows(rng: random.Random, env: Environment) -> Task:
    p = pick(rng, PRODUCTS)
    return Task(
        query=f"How many rows of the sales table are about {p}s?",
        calls=[call("count_rows", column="product", value=p)],
    )


@DATA.template("top")
def top(rng: random.Random, env: Environment) -> Task:
    col = pick(rng, ["units", "revenue"])
    k = rng.randint(1, 5)
    low = rng.random() < 0.3
    args: dict[str, Any] = {
        "column": col,
        **({} if k == 3 else {"k": k}),
        **({"ascending": True} if low else {}),
    }
    return Task(
        query=f"Which {k} sales rows have the {'lowest' if low else 'highest'} {col}?",
        calls=[call("top_rows", **args)],
    )


@DATA.template("correlation")
def correlation(rng: random.Random, env: Environment) -> Task:
    a, b = rng.sample(NUMERIC, 2)
    return Task(
        query=f"How strongly are {a} and {b} correlated?",
        calls=[call("correlation", column_a=a, column_b=b)],
    )


@DATA.template("schema")
def schema(rng: random.Random, env: Environment) -> Task:
    if rng.random() < 0.5:
        return Task(query="What columns does the sales table have?", calls=[call("list_columns")])
    col = pick(rng, ["region", "product", "month"])
    return Task(
        query=f"Which distinct {col} values appear in the table?",
        calls=[call("distinct_values", column=col)],
    )


@DATA.template("stat_and_group")
def stat_and_group(rng: random.Random, env: Environment) -> Task:
    col = pick(rng, ["units", "revenue"])
    return Task(
        query=f"Give me the total {col} overall and the total {col} per region.",
        calls=[
            call("column_stat", column=col, stat="sum"),
            call("group_aggregate", group_by="region", column=col),
        ],
    )


# -- RS: real-time search ---------------------------------------------------------------------------
REALTIME = TaskSet("realtime_search")


@REALTIME.template("fx", weight=2)
def fx(rng: random.Random, env: Environment) -> Task:
    a, b = rng.sample(list(CURRENCIES), 2)
    return Task(
        query=pick(
            rng,
            [
                f"What's the exchange rate from {a} to {b} right now?",
                f"How many {b} do I get for one {a} today?",
            ],
        ),
        calls=[call("get_exchange_rate", base=a, quote=b)],
    )


@REALTIME.template("stock", weight=2)
def stock(rng: random.Random, env: Environment) -> Task:
    s = pick(rng, list(STOCKS))
    return Task(
        query=f"What's the latest price of {s} stock?", calls=[call("get_stock_quote", symbol=s)]
    )


@REALTIME.template("news", weight=2)
def news(rng: random.Random, env: Environment) -> Task:
    t = pick(rng, TOPICS)
    n = rng.randint(1, 5)
    args: dict[str, Any] = {"topic": t, **({} if n == 3 else {"limit": n})}
    lang = ""
    if rng.random() < 0.3:
        code, word = pick(rng, [("es", "Spanish"), ("fr", "French"), ("de", "German")])
        args["language"] = code
        lang = f" in {word}"
    return Task(
        query=f"Show me the {n} latest {t} headlines{lang}.", calls=[call("search_news", **args)]
    )


@REALTIME.template("time")
def time(rng: random.Random, env: Environment) -> Task:
    c = pick(rng, list(TIMEZONES))
    return Task(query=f"What time is it in {c} now?", calls=[call("get_local_time", city=c)])


@REALTIME.template("flight")
def flight(rng: random.Random, env: Environment) -> Task:
    f = f"{pick(rng, AIRLINES)}{rng.randint(1, 999)}"
    return Task(
        query=f"Is flight {f} on time today?", calls=[call("get_flight_status", flight_number=f)]
    )


@REALTIME.template("two_stocks")
def two_stocks(rng: random.Random, env: Environment) -> Task:
    a, b = rng.sample(list(STOCKS), 2)
    return Task(
        query=f"Compare the current prices of {a} and {b}.",
        calls=[call("get_stock_quote", symbol=a), call("get_stock_quote", symbol=b)],
    )


@REALTIME.template("trip_check")
def trip_check(rng: random.Random, env: Environment) -> Task:
    f = f"{pick(rng, AIRLINES)}{rng.randint(1, 999)}"
    c = pick(rng, list(TIMEZONES))
    return Task(
        query=f"I'm landing in {c} on flight {f}: what's its status and the local time there?",
        calls=[call("get_flight_status", flight_number=f), call("get_local_time", city=c)],
    )


# -- AM: application manipulation (workspace) --------------------------------------------------------
WORKSPACE = TaskSet("workspace")
_FILES = [f for f in BASE_FILES if f.endswith(".txt")]
_NEW = ("notes/meeting.txt", "drafts/poem.txt", "plans/week.txt", "shopping.txt")
_LINES = ("call the plumber", "send the invoice", "walk the dog", "book the dentist", "buy stamps")


@WORKSPACE.template("create", weight=2)
def create(rng: random.Random, env: Environment) -> Task:
    path, text = pick(rng, _NEW), pick(rng, _LINES)
    return Task(
        query=f'Create a file {path} containing "{text}".',
        calls=[call("create_file", path=path, content=text)],
    )


@WORKSPACE.template("append", weight=2)
def append(rng: random.Random, env: Environment) -> Task:
    path, text = pick(rng, _FILES), pick(rng, _LINES)
    return Task(
        query=f'Add the line "{text}" to {path}.',
        calls=[call("append_to_file", path=path, content=text)],
    )


@WORKSPACE.template("read")
def read_file(rng: random.Random, env: Environment) -> Task:
    path = pick(rng, list(BASE_FILES))
    return Task(query=f"Show me what's in {path}.", calls=[call("read_file", path=path)])


@WORKSPACE.template("delete")
def delete(rng: random.Random, env: Environment) -> Task:
    path = pick(rng, list(BASE_FILES))
    return Task(query=f"Delete {path}.", calls=[call("delete_file", path=path)])


@WORKSPACE.template("move")
def move(rng: random.Random, env: Environment) -> Task:
    path = pick(rng, _FILES)
    dst = pick(rng, ["archive/", "old/"]) + path.split("/")[-1]
    return Task(
        query=f"Move {path} to {dst}.", calls=[call("move_file", source=path, destination=dst)]
    )


@WORKSPACE.template("copy")
def copy(rng: random.Random, env: Environment) -> Task:
    path = pick(rng, list(BASE_FILES))
    dst = "backup/" + path.split("/")[-1]
    return Task(
        query=f"Make a backup copy of {path} at {dst}.",
        calls=[call("copy_file", source=path, destination=dst)],
    )


@WORKSPACE.template("mkdir_list")
def mkdir_list(rng: random.Random, env: Environment) -> Task:
    if rng.random() < 0.5:
        d = pick(rng, ["archive", "photos", "invoices"])
        return Task(query=f"Create a folder called {d}.", calls=[call("make_directory", path=d)])
    d = pick(rng, ["notes", "reports", "drafts"])
    return Task(query=f"What files are in the {d} folder?", calls=[call("list_directory", path=d)])


@WORKSPACE.template("replace")
def replace(rng: random.Random, env: Environment) -> Task:
    path, old, new = pick(
        rng,
        [
            ("notes/todo.txt", "milk", "oat milk"),
            ("drafts/letter.txt", "Sam", "Alex"),
            ("readme.md", "Project", "Garden Project"),
            ("notes/ideas.txt", "bike", "scooter"),
        ],
    )
    return Task(
        query=f'In {path}, replace "{old}" with "{new}".',
        calls=[call("replace_in_file", path=path, old=old, new=new)],
    )


@WORKSPACE.template("archive")
def archive(rng: random.Random, env: Environment) -> Task:
    path = pick(rng, _FILES)
    name = path.split("/")[-1]
    return Task(
        query=f"Create an archive folder and move {path} into it.",
        calls=[
            call("make_directory", path="archive"),
            call("move_file", source=path, destination=f"archive/{name}"),
        ],
        alternatives=[
            [
                call("make_directory", path="archive"),
                call("move_file", source=path, destination="archive"),
            ]
        ],
    )


# -- PL: personal life --------------------------------------------------------------------------------
PERSONAL = TaskSet("personal_life")
_EVENTS = ("Coffee with Jo", "Gym", "Book club", "Parent-teacher meeting", "Car service", "Haircut")
_CHORES = ("clean the garage", "call grandma", "file taxes", "fix the bike")
_ITEMS = ("milk", "apples", "bread", "cheese", "tomatoes", "pasta")


def _pl(env: Environment) -> PersonalLifeEnv:
    if not isinstance(env, PersonalLifeEnv):
        raise TypeError("personal-life templates need a PersonalLifeEnv")
    return env


def _day(rng: random.Random, env: PersonalLifeEnv) -> str:
    import datetime as dt

    return (env.today + dt.timedelta(days=rng.randint(1, 20))).isoformat()


@PERSONAL.template("event", weight=2)
def event(rng: random.Random, env: Environment) -> Task:
    e = _pl(env)
    title, d = pick(rng, _EVENTS), _day(rng, e)
    t = f"{rng.randint(8, 19):02d}:{pick(rng, ['00', '30'])}"
    args: dict[str, Any] = {"title": title, "date": d, "time": t}
    extra = ""
    if rng.random() < 0.4:
        args["duration_minutes"] = rng.choice([30, 90, 120])
        extra = f" for {args['duration_minutes']} minutes"
    return Task(
        query=f"Put {title} in my calendar on {say_date(rng, d)} at {t}{extra}.",
        calls=[call("add_event", **args)],
    )


@PERSONAL.template("cancel")
def cancel(rng: random.Random, env: Environment) -> Task:
    ev = pick(rng, [f"{v['title']}|{v['date']}" for v in _pl(env).events.values()])
    title, d = ev.split("|")
    return Task(
        query=f"Cancel my {title} on {say_date(rng, d)}.",
        calls=[call("cancel_event", title=title, date=d)],
    )


@PERSONAL.template("todo", weight=2)
def todo(rng: random.Random, env: Environment) -> Task:
    task = pick(rng, _CHORES)
    pr = pick(rng, ["low", "normal", "high"])
    args: dict[str, Any] = {"task": task, **({} if pr == "normal" else {"priority": pr})}
    word = "" if pr == "normal" else f" with {pr} priority"
    return Task(query=f"Add '{task}' to my to-do list{word}.", calls=[call("add_todo", **args)])


@PERSONAL.template("complete")
def complete(rng: random.Random, env: Environment) -> Task:
    task = pick(rng, list(_pl(env).todos))
    return Task(
        query=f"I finished '{task}', tick it off.", calls=[call("complete_todo", task=task)]
    )


@PERSONAL.template("alarm", weight=2)
def alarm(rng: random.Random, env: Environment) -> Task:
    t = f"{rng.randint(5, 9):02d}:{pick(rng, ['00', '15', '30', '45'])}"
    args: dict[str, Any] = {"time": t}
    text = f"Set an alarm for {t}"
    if rng.random() < 0.5:
        days = pick(rng, ["weekdays", "weekends"])
        args["repeat_days"] = (
            ["mon", "tue", "wed", "thu", "fri"] if days == "weekdays" else ["sat", "sun"]
        )
        text += f" on {days}"
    if rng.random() < 0.4:
        args["label"] = pick(rng, ["Run", "Meds", "Work"])
        text += f" labelled {args['label']}"
    return Task(query=text + ".", calls=[call("set_alarm", **args)])


@PERSONAL.template("contact")
def contact(rng: random.Random, env: Environment) -> Task:
    name = pick(rng, ["Rosa Diaz", "Ken Ito", "Ada Obi", "Leo Park"])
    phone = f"+1{rng.randint(200, 999)}{rng.randint(1000000, 9999999)}"
    return Task(
        query=f"Save {name}'s number, {phone}.", calls=[call("add_contact", name=name, phone=phone)]
    )


@PERSONAL.template("shopping", weight=2)
def shopping(rng: random.Random, env: Environment) -> Task:
    if rng.random() < 0.35:
        item = pick(rng, list(_pl(env).shopping))
        return Task(
            query=f"Take {item} off my shopping list.",
            calls=[call("remove_from_shopping_list", item=item)],
        )
    item = pick(rng, _ITEMS)
    n = rng.randint(1, 4)
    return Task(
        query=f"Add {n} {item} to the shopping list.",
        calls=[call("add_to_shopping_list", item=item, **({} if n == 1 else {"quantity": n}))],
    )


@PERSONAL.template("agenda")
def agenda(rng: random.Random, env: Environment) -> Task:
    d = pick(rng, [v["date"] for v in _pl(env).events.values()])
    return Task(
        query=f"What's on my calendar on {say_date(rng, d)}?", calls=[call("list_events", date=d)]
    )


@PERSONAL.template("plan_evening")
def plan_evening(rng: random.Random, env: Environment) -> Task:
    e = _pl(env)
    d = _day(rng, e)
    item = pick(rng, _ITEMS)
    return Task(
        query=f"Schedule Dinner party on {say_date(rng, d)} at 19:00 and add {item} to my shopping list.",
        calls=[
            call("add_event", title="Dinner party", date=d, time="19:00"),
            call("add_to_shopping_list", item=item),
        ],
    )


# -- IR: information retrieval -------------------------------------------------------------------------
RETRIEVAL = TaskSet("info_retrieval")


@RETRIEVAL.template("books_by_author", weight=2)
def books_by_author(rng: random.Random, env: Environment) -> Task:
    author = pick(rng, sorted({b[2] for b in BOOKS}))
    return Task(
        query=f"Which books by {author} are in the catalogue?",
        calls=[call("search_books", author=author)],
    )


@RETRIEVAL.template("books_by_genre")
def books_by_genre(rng: random.Random, env: Environment) -> Task:
    g = pick(rng, GENRES)
    y = rng.choice([1800, 1850, 1870, 1890])
    return Task(
        query=f"Find {g} books published after {y - 1}.",
        calls=[call("search_books", genre=g, year_from=y)],
    )


@RETRIEVAL.template("book")
def book(rng: random.Random, env: Environment) -> Task:
    b = BOOKS[rng.randrange(len(BOOKS))]
    return Task(
        query=f"Give me the details of book {b[0]}.", calls=[call("get_book", book_id=b[0])]
    )


@RETRIEVAL.template("country", weight=2)
def country(rng: random.Random, env: Environment) -> Task:
    c = pick(rng, list(COUNTRIES))
    fields = sorted(
        rng.sample(["capital", "currency", "language", "population_millions"], rng.randint(1, 2)),
        key=["capital", "population_millions", "currency", "language", "continent"].index,
    )
    words = " and ".join("population" if f == "population_millions" else f for f in fields)
    return Task(
        query=f"What is the {words} of {c}?",
        calls=[call("get_country_facts", country=c, fields=fields)],
    )


@RETRIEVAL.template("country_all")
def country_all(rng: random.Random, env: Environment) -> Task:
    c = pick(rng, list(COUNTRIES))
    return Task(
        query=f"Tell me everything you have about {c}.",
        calls=[call("get_country_facts", country=c)],
    )


@RETRIEVAL.template("define")
def define(rng: random.Random, env: Environment) -> Task:
    w = pick(rng, list(WORDS))
    return Task(query=f'What does "{w}" mean?', calls=[call("define_word", word=w)])


@RETRIEVAL.template("recipes")
def recipes(rng: random.Random, env: Environment) -> Task:
    ing = pick(rng, sorted({r[1] for r in RECIPES}))
    if rng.random() < 0.5:
        m = rng.choice([15, 30, 45])
        return Task(
            query=f"Recipes with {ing} that take at most {m} minutes?",
            calls=[call("search_recipes", ingredient=ing, max_minutes=m)],
        )
    return Task(
        query=f"What can I cook with {ing}?", calls=[call("search_recipes", ingredient=ing)]
    )


@RETRIEVAL.template("two_words")
def two_words(rng: random.Random, env: Environment) -> Task:
    a, b = rng.sample(list(WORDS), 2)
    return Task(
        query=f'Define "{a}" and "{b}".',
        calls=[call("define_word", word=a), call("define_word", word=b)],
    )


# -- FT: financial transactions ----------------------------------------------------------------------------
FINANCE = TaskSet("finance")


def _fin(env: Environment) -> FinanceEnv:
    if not isinstance(env, FinanceEnv):
        raise TypeError("finance templates need a FinanceEnv")
    return env


def _amount(rng: random.Random) -> float:
    return float(rng.randrange(2, 60) * 5)


@FINANCE.template("balance", weight=2)
def balance(rng: random.Random, env: Environment) -> Task:
    a = pick(rng, list(_fin(env).accounts))
    return Task(
        query=f"What's the balance of account {a}?", calls=[call("get_balance", account_id=a)]
    )


@FINANCE.template("transfer", weight=2)
def transfer(rng: random.Random, env: Environment) -> Task:
    a, b = rng.sample(list(_fin(env).accounts), 2)
    amt = _amount(rng)
    return Task(
        query=f"Transfer {money(amt)} from {a} to {b}.",
        calls=[call("transfer", from_account=a, to_account=b, amount=amt)],
    )


@FINANCE.template("deposit_withdraw")
def deposit_withdraw(rng: random.Random, env: Environment) -> Task:
    a = pick(rng, list(_fin(env).accounts))
    amt = _amount(rng)
    if rng.random() < 0.5:
        return Task(
            query=f"Deposit {money(amt)} into {a}.",
            calls=[call("deposit", account_id=a, amount=amt)],
        )
    return Task(
        query=f"Withdraw {money(amt)} from {a}.", calls=[call("withdraw", account_id=a, amount=amt)]
    )


@FINANCE.template("bill")
def bill(rng: random.Random, env: Environment) -> Task:
    a = pick(rng, list(_fin(env).accounts))
    p, amt = pick(rng, BILL_PAYEES), _amount(rng)
    return Task(
        query=f"Pay my {p} bill of {money(amt)} from {a}.",
        calls=[call("pay_bill", account_id=a, payee=p, amount=amt)],
    )


@FINANCE.template("history")
def history(rng: random.Random, env: Environment) -> Task:
    a = pick(rng, list(_fin(env).accounts))
    cat = pick(rng, [c for c in CATEGORIES if c != "salary"])
    return Task(
        query=f"List the {cat} transactions of {a}.",
        calls=[call("list_transactions", account_id=a, category=cat)],
    )


@FINANCE.template("summary")
def summary(rng: random.Random, env: Environment) -> Task:
    a, m = pick(rng, list(_fin(env).accounts)), pick(rng, MONTHS)
    return Task(
        query=f"How much did {a} spend per category in {m}?",
        calls=[call("spending_summary", account_id=a, month=m)],
    )


@FINANCE.template("convert")
def convert(rng: random.Random, env: Environment) -> Task:
    a, b = rng.sample(list(RATES), 2)
    amt = _amount(rng)
    return Task(
        query=f"How much is {amt:g} {a} in {b}?",
        calls=[call("convert_currency", amount=amt, from_currency=a, to_currency=b)],
    )


@FINANCE.template("transfer_and_check")
def transfer_and_check(rng: random.Random, env: Environment) -> Task:
    a, b = rng.sample(list(_fin(env).accounts), 2)
    amt = _amount(rng)
    return Task(
        query=f"Send {money(amt)} from {a} to {b}, then tell me {a}'s new balance.",
        calls=[
            call("transfer", from_account=a, to_account=b, amount=amt),
            call("get_balance", account_id=a),
        ],
    )


TASKSETS = [TEXT, DATA, REALTIME, WORKSPACE, PERSONAL, RETRIEVAL, FINANCE]
