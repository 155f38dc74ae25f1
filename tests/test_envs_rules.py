"""Each environment's rules: ordering, validation, defaults, preconditions, confinement."""

from __future__ import annotations

import jsonschema
import pytest

from toollab.envs import env_names, get_env
from toollab.envs.base import (
    BAD_ARGUMENTS,
    BAD_VALUE,
    MISSING,
    NOT_FOUND,
    ORDER,
    PRECONDITION,
    UNKNOWN_TOOL,
    dict_prf,
)
from toollab.envs.favourites import FavouritesEnv
from toollab.envs.finance import FinanceEnv
from toollab.envs.spreadsheet import SpreadsheetEnv
from toollab.envs.workspace import WorkspaceEnv
from toollab.errors import UsageError
from toollab.schema import ToolCall


def c(name: str, **args: object) -> ToolCall:
    return ToolCall(name=name, arguments=args)


ALL = env_names()


def test_registry_lists_every_environment_and_suggests_names() -> None:
    assert {
        "home_search",
        "trip_booking",
        "weather",
        "favourites",
        "spreadsheet",
        "household",
        "text_generation",
        "data_understanding",
        "realtime_search",
        "workspace",
        "personal_life",
        "info_retrieval",
        "finance",
    } <= set(ALL)
    with pytest.raises(UsageError, match="did you mean 'home_search'"):
        get_env("home_serch")


def test_every_scenario_has_an_environment() -> None:
    scenarios = {get_env(n).scenario for n in ALL}
    assert {"TG", "DU", "RS", "AM", "PL", "IR", "FT"} <= scenarios


@pytest.mark.parametrize("name", ALL)
def test_tool_schemas_are_valid_json_schema_and_states_serialise(name: str) -> None:
    import json

    env = get_env(name)
    assert env.tools, name
    for tool in env.tools:
        jsonschema.Draft202012Validator.check_schema(tool.parameters)
        assert env.pool.entry(tool.name).executable, tool.name
    json.dumps(env.state())


@pytest.mark.parametrize("name", ALL)
def test_unknown_function_and_bad_arguments_crash(name: str) -> None:
    env = get_env(name)
    ex = env.run([c("no_such_function")])
    assert ex.crashed and ex.reason == UNKNOWN_TOOL and ex.failed_call == 0
    tool = env.tools[0]
    ex = env.run([c(tool.name, surprise_argument=1)])
    assert ex.crashed and ex.reason == BAD_ARGUMENTS and "surprise_argument" in (ex.error or "")


def test_sizes_follow_the_paper() -> None:
    assert len(get_env("home_search").tools) == 15
    assert len(get_env("trip_booking").tools) == 20
    assert len(get_env("weather").tools) == 9
    assert len(get_env("household").tools) == 40


def test_dict_prf() -> None:
    assert dict_prf({}, {}) == (1.0, 1.0, 1.0)
    assert dict_prf({}, {"a": 1}) == (0.0, 0.0, 0.0)
    p, r, f = dict_prf({"a": 1, "b": 2}, {"a": 1, "b": 3, "c": 4})
    assert (p, r) == (0.5, 1 / 3) and abs(f - 0.4) < 1e-9


# -- home search ----------------------------------------------------------------------------------------
def test_home_search_order_types_and_defaults() -> None:
    env = get_env("home_search")
    prog = [
        c("set_location", location="Cape Coral"),
        c("set_buy_or_rent", buy_or_rent="buy"),
        c("select_home_type", home_types=["Multi-family", "Townhouse", "Co-op"]),
        c("set_min_price", min_price=707000),
        c("set_max_price", max_price=1457000),
        c("search"),
    ]
    ex = env.run(prog)
    assert not ex.crashed
    assert ex.state == {
        "location": "Cape Coral",
        "buy_or_rent": "buy",
        "home_type": "co-op,multi-family,townhouse",
        "min_price": 707000,
        "max_price": 1457000,
        "min_square_feet": 0,
    }
    swapped = env.run([prog[1], prog[0], *prog[2:]])
    assert swapped.crashed and swapped.reason == ORDER and swapped.failed_call == 0
    early = env.run([prog[0], prog[3]])
    assert early.crashed and early.reason == ORDER
    wrong_type = env.run(
        [
            prog[0],
            c("set_buy_or_rent", buy_or_rent="rent"),
            c("select_home_type", home_types=["land"]),
        ]
    )
    assert wrong_type.crashed and wrong_type.reason == BAD_VALUE


# -- trip booking ---------------------------------------------------------------------------------------
def test_trip_booking_rules() -> None:
    env = get_env("trip_booking")
    tickets = [
        c("select_booking_type", booking_type="trip tickets"),
        c("set_num_adults", num_adults=3),
        c("select_transportation", transportation="cruise"),
        c("set_origin", location="Fort Worth"),
        c("set_destination", location="Ontario"),
        c("set_departure_date", date="2023-05-17"),
        c("search_bookings"),
    ]
    ex = env.run(tickets)
    assert ex.state["departure_date"] == "5-17-2023" and ex.state["min_price_ticket"] == 0
    assert "num_rooms" not in ex.state
    assert env.run(tickets[1:2] + tickets[:1]).reason == ORDER
    missing = env.run([tickets[0], tickets[2], tickets[3], tickets[6]])
    assert missing.crashed and missing.reason == MISSING and "location_to" in (missing.error or "")
    bad_date = env.run([tickets[0], c("set_departure_date", date="2023-02-30")])
    assert bad_date.crashed and bad_date.reason == BAD_VALUE
    both = [
        c("select_booking_type", booking_type="both"),
        c("select_transportation", transportation="train"),
        c("set_origin", location="Boston"),
        c("set_destination", location="Chicago"),
        c("set_hotel_location", location="Chicago"),
        c("set_checkin_date", date="2024-03-01"),
        c("set_checkout_date", date="2024-03-04"),
        c("search_bookings"),
    ]
    st = env.run(both).state
    assert (
        st["departure_date"] == "3-1-2024"
        and st["return_date"] == "3-4-2024"
        and st["num_rooms"] == 1
    )


# -- weather --------------------------------------------------------------------------------------------
def test_weather_responses_agree_across_spellings_and_depend_on_units() -> None:
    env = get_env("weather", seed=3)
    by_city = env.run([c("current_weather_by_city", city="palo alto", units="metric")], 3).state
    by_coords = env.run(
        [c("current_weather_by_coordinates", lat=37.44, lon=-122.14, units="metric")], 3
    ).state
    by_zip = env.run(
        [c("current_weather_by_zip", zip_code="94301", country_code="US", units="metric")], 3
    ).state
    assert by_city == by_coords == by_zip
    kelvin = env.run([c("current_weather_by_city", city="Palo Alto")], 3).state
    assert kelvin["0.units"] == "standard" and kelvin["0.temp"] > 200 and kelvin != by_city
    assert env.run([c("current_weather_by_city", city="Atlantis")]).reason == NOT_FOUND
    # a different seed is a different day
    assert env.run([c("current_weather_by_city", city="Palo Alto")], 4).state != kelvin


# -- favourites -----------------------------------------------------------------------------------------
def test_favourites_add_delete_vote() -> None:
    env = get_env("favourites", seed=5)
    assert isinstance(env, FavouritesEnv)
    fav_id = next(iter(env.favourites))
    image = env.favourites[fav_id]["image_id"]
    assert env.run([c("add_favourite", image_id=image)], 5).reason == BAD_VALUE  # duplicate
    ex = env.run([c("delete_favourite", favourite_id=fav_id)], 5)
    assert f"favourite:{image}" not in ex.state
    assert env.run([c("delete_favourite", favourite_id=1)], 5).reason == NOT_FOUND
    st = env.run([c("vote", image_id=image, value=-1)], 5).state
    assert st[f"vote:{image}"] == -1


# -- spreadsheet ----------------------------------------------------------------------------------------
def test_spreadsheet_operations_on_a_real_dataframe() -> None:
    import pandas as pd

    env = get_env("spreadsheet", seed=0)
    assert isinstance(env, SpreadsheetEnv)
    assert isinstance(env.df, pd.DataFrame)
    n = len(env.df)
    cols = list(env.df.columns)
    ex = env.run([c("write_formula", cell=f"B{n + 2}", formula=f"=SUM(B2:B{n + 1})")], 0)
    env.reset(0)
    expected = sum(int(v) for v in env.df.iloc[:, 1].tolist())
    assert ex.state[f"B{n + 2}"] == expected and ex.state["shape"] == [n + 2, len(cols)]
    sorted_ex = env.run([c("sort_rows", column=cols[2], ascending=False)], 0)
    values = [sorted_ex.state[f"C{i}"] for i in range(2, n + 2)]
    assert values == sorted(values, reverse=True)
    filt = env.run([c("filter_rows", column=cols[2], operator=">", value=10**9)], 0)
    assert filt.state["shape"] == [1, len(cols)]
    comp = env.run(
        [c("add_computed_column", column="Diff", expression=f"{cols[2]} - {cols[1]}")], 0
    )
    assert comp.state[f"{chr(65 + len(cols))}1"] == "Diff"
    assert env.run([c("update_cell", cell="A1", value="x")], 0).reason == BAD_VALUE
    assert env.run([c("delete_column", column="Nope")], 0).reason == NOT_FOUND


# -- household ------------------------------------------------------------------------------------------
def test_household_preconditions_and_lcs() -> None:
    env = get_env("household")
    ok = [
        c("Walk", object="living_room"),
        c("Find", object="tv"),
        c("SwitchOn", object="tv"),
        c("Find", object="sofa"),
        c("Sit", object="sofa"),
        c("Watch", object="tv"),
    ]
    ex = env.run(ok)
    assert not ex.crashed and ex.state["tv.on"] is True and ex.state["agent.posture"] == "sitting"
    assert env.run([c("SwitchOn", object="tv")]).reason == PRECONDITION  # not within reach
    assert env.run([c("Find", object="unicorn")]).reason == NOT_FOUND
    milk = env.run([c("Find", object="milk")])
    assert milk.crashed and "closed" in (milk.error or "")
    walk_while_sitting = env.run([*ok, c("Walk", object="kitchen")])
    assert walk_while_sitting.reason == PRECONDITION
    assert env.plan_lcs(ok, [ok]) == 1.0
    assert env.plan_lcs(ok[1:], [ok]) == pytest.approx(5 / 6)
    # object names are compared normalised: "TV" and "tv" are one object
    assert env.plan_lcs([c("Find", object="TV"), *ok[2:]], [ok[1:]]) == 1.0
    # a worn object is wherever the agent is: finding it does not break the world model
    worn = env.run(
        [
            c("Find", object="shoes"),
            c("Grab", object="shoes"),
            c("PutOn", object="shoes"),
            c("Walk", object="kitchen"),
            c("Find", object="shoes"),
        ]
    )
    assert not worn.crashed and worn.state["agent.room"] == "kitchen"


# -- scenario environments ------------------------------------------------------------------------------
def test_workspace_files_are_real_and_confined() -> None:
    env = get_env("workspace")
    assert isinstance(env, WorkspaceEnv)
    root = env.root
    ex = env.run(
        [
            c("create_file", path="notes/new.txt", content="hi"),
            c("move_file", source="notes/todo.txt", destination="archive/todo.txt"),
        ]
    )
    assert (root / "notes" / "new.txt").read_text() == "hi"
    assert ex.state["file:notes/new.txt"] == "hi" and "file:notes/todo.txt" not in ex.state
    for bad in ("../escape.txt", "/etc/passwd", "notes/../../x"):
        out = env.run([c("create_file", path=bad, content="x")])
        assert out.crashed and out.reason == BAD_ARGUMENTS
    env.reset(0)
    assert not (root / "notes" / "new.txt").exists() and (root / "notes" / "todo.txt").is_file()


def test_finance_balances_and_insufficient_funds() -> None:
    env = get_env("finance", seed=2)
    assert isinstance(env, FinanceEnv)
    a, b = list(env.accounts)[:2]
    before = env.accounts[a]["balance"]
    ex = env.run([c("transfer", from_account=a, to_account=b, amount=10.5)], 2)
    assert ex.state[f"balance:{a}"] == round(before - 10.5, 2)
    assert env.run([c("withdraw", account_id=a, amount=10**9)], 2).reason == BAD_VALUE


def test_personal_life_and_retrieval_and_text() -> None:
    pl = get_env("personal_life")
    st = pl.run([c("set_alarm", time="07:30", repeat_days=["fri", "mon"])]).state
    assert st["alarm:07:30"] == "Alarm mon,fri"
    ir = get_env("info_retrieval")
    st = ir.run([c("get_country_facts", country="japan", fields=["capital"])]).state
    assert st["0.capital"] == "Tokyo" and "0.currency" not in st
    tg = get_env("text_generation", seed=1)
    a = tg.run([c("generate_uuids", count=2)], 1).state
    assert (
        a == tg.run([c("generate_uuids", count=2)], 1).state
        and a != tg.run([c("generate_uuids", count=2)], 2).state
    )
