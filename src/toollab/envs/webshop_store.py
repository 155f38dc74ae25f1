"""The WebShop catalogue and its search engine: a seeded synthetic shop, searched with BM25.

The catalogue is generated, never read from a file: :func:`catalogue` draws :data:`SIZE`
products from the product types below (five categories, as in WebShop: beauty, food, fashion,
home, electronics) with a fixed seed, so every run sees the same shop.  A product has an id in
the ASIN style (``B0`` and eight letters or digits), a title, its category and product type, two
to four attributes ("gluten free", "machine wash"), options of one or more kinds (size, colour,
flavour, ...), two to five values each, and a price.

:meth:`Catalogue.search` ranks the products for a query with
:class:`~toollab.retrieval.text_index.TextIndex` (BM25 over the title, type, category,
attributes and option values) and keeps the best :data:`MAX_RESULTS`, WebShop's search depth.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the index itself is imported when the first search is made (see _index)
    from toollab.retrieval.text_index import TextIndex

#: products in the shop
SIZE = 3000
#: the seed the shop is drawn with
CATALOGUE_SEED = 0
#: how many products a search returns (WebShop's depth), shown :data:`PAGE_SIZE` per page
MAX_RESULTS = 50
PAGE_SIZE = 10

_SIZES = ("small", "medium", "large", "x-large", "xx-large")
_COLOURS = ("black", "white", "navy", "grey", "red", "green", "beige", "pink", "blue", "brown")
_SHOE_SIZES = ("6", "7", "7.5", "8", "8.5", "9", "10", "11", "12")
_COUNTS = ("1 count", "2 count", "6 count", "12 count", "24 count")


@dataclass(frozen=True)
class ProductType:
    """A kind of product: its attribute pool, its option kinds with their values, its prices."""

    name: str
    category: str
    attributes: tuple[str, ...]
    options: tuple[tuple[str, tuple[str, ...]], ...]
    price: tuple[float, float]


def _t(
    name: str,
    category: str,
    attributes: str,
    options: dict[str, tuple[str, ...]],
    price: tuple[float, float],
) -> ProductType:
    return ProductType(name, category, tuple(attributes.split(", ")), tuple(options.items()), price)


#: the product types of the shop, by category
TYPES: tuple[ProductType, ...] = (
    # beauty
    _t("shampoo", "beauty", "sulfate free, paraben free, natural ingredients, for dry hair, long lasting, cruelty free, travel size, fragrance free",
       {"scent": ("lavender", "coconut", "mint", "unscented", "citrus"), "size": ("8 fl oz", "12 fl oz", "16 fl oz", "32 fl oz")}, (6, 30)),
    _t("face moisturizer", "beauty", "fragrance free, for sensitive skin, hyaluronic acid, oil free, spf 30, non greasy, vegan, dermatologist tested",
       {"size": ("1.7 oz", "2.5 oz", "4 oz")}, (9, 60)),
    _t("lipstick", "beauty", "long lasting, cruelty free, matte finish, vegan, paraben free, high pigment, moisturizing",
       {"color": ("red", "nude", "pink", "berry", "coral", "plum")}, (5, 28)),
    _t("nail polish", "beauty", "quick dry, non toxic, long lasting, high gloss, cruelty free, chip resistant, vegan",
       {"color": ("red", "nude", "pink", "black", "blue", "purple", "gold")}, (4, 18)),
    _t("hair dryer", "beauty", "ionic technology, lightweight, low noise, fast drying, foldable handle, ceramic, travel size",
       {"color": ("black", "white", "pink", "rose gold")}, (18, 120)),
    _t("makeup brush set", "beauty", "synthetic bristles, cruelty free, easy to clean, travel size, soft, vegan, with case",
       {"count": ("5 pieces", "10 pieces", "15 pieces"), "color": ("black", "pink", "rose gold", "white")}, (8, 45)),
    # food
    _t("green tea", "food", "organic, caffeine free, gluten free, non gmo, individually wrapped, kosher, sugar free",
       {"flavor": ("jasmine", "mint", "lemon", "matcha", "peach"), "count": _COUNTS}, (5, 35)),
    _t("coffee beans", "food", "organic, fair trade, dark roast, medium roast, whole bean, low acid, kosher, non gmo",
       {"flavor": ("original", "vanilla", "hazelnut", "caramel", "mocha"), "size": ("12 oz", "1 lb", "2 lb", "5 lb")}, (8, 55)),
    _t("protein bars", "food", "gluten free, high protein, low sugar, non gmo, keto friendly, vegan, individually wrapped, soy free",
       {"flavor": ("chocolate", "peanut butter", "cookie dough", "berry", "vanilla"), "count": _COUNTS}, (10, 45)),
    _t("trail mix", "food", "gluten free, non gmo, no added sugar, resealable bag, kosher, vegan, high protein",
       {"flavor": ("sweet and salty", "tropical", "dark chocolate", "honey nut"), "size": ("8 oz", "16 oz", "26 oz")}, (5, 25)),
    _t("olive oil", "food", "extra virgin, cold pressed, organic, non gmo, kosher, first harvest, glass bottle",
       {"size": ("16.9 fl oz", "25.3 fl oz", "33.8 fl oz", "1 gallon")}, (9, 48)),
    _t("gummy candy", "food", "gluten free, fat free, vegan, non gmo, individually wrapped, kosher, peanut free",
       {"flavor": ("sour", "fruit", "cola", "cherry", "watermelon"), "size": ("5 oz", "2 lb", "5 lb")}, (4, 30)),
    _t("pasta", "food", "whole grain, gluten free, organic, non gmo, high protein, vegan, kosher",
       {"flavor": ("spaghetti", "penne", "fusilli", "rigatoni"), "count": _COUNTS}, (3, 30)),
    # fashion
    _t("t-shirt", "fashion", "machine wash, short sleeve, cotton, slim fit, moisture wicking, crew neck, breathable, classic fit",
       {"size": _SIZES, "color": _COLOURS}, (8, 35)),
    _t("running shoes", "fashion", "non slip, lightweight, breathable, rubber sole, arch support, memory foam, wide width",
       {"size": _SHOE_SIZES, "color": ("black", "white", "grey", "blue", "red", "pink")}, (30, 140)),
    _t("hiking boots", "fashion", "waterproof, non slip, ankle support, rubber sole, lightweight, leather, insulated",
       {"size": _SHOE_SIZES, "color": ("brown", "black", "grey", "olive")}, (45, 190)),
    _t("hoodie", "fashion", "machine wash, fleece lined, pullover, zip up, relaxed fit, cotton, long sleeve, drawstring",
       {"size": _SIZES, "color": _COLOURS}, (18, 70)),
    _t("yoga pants", "fashion", "high waist, tummy control, moisture wicking, four way stretch, machine wash, with pockets, squat proof",
       {"size": _SIZES, "color": ("black", "navy", "grey", "burgundy", "olive", "purple")}, (14, 60)),
    _t("winter jacket", "fashion", "waterproof, windproof, hooded, down filled, machine wash, packable, fleece lined",
       {"size": _SIZES, "color": ("black", "navy", "red", "olive", "grey")}, (45, 220)),
    _t("socks", "fashion", "cotton, moisture wicking, cushioned, no show, machine wash, anti odor, arch support",
       {"size": ("small", "medium", "large"), "count": ("3 pairs", "6 pairs", "12 pairs"), "color": ("black", "white", "grey")}, (7, 30)),
    # home
    _t("throw pillow cover", "home", "machine wash, hidden zipper, double sided, soft, linen, velvet, set of 2",
       {"size": ("16x16 inch", "18x18 inch", "20x20 inch", "24x24 inch"), "color": ("beige", "grey", "navy", "green", "pink", "white")}, (8, 35)),
    _t("bed sheet set", "home", "deep pocket, wrinkle free, breathable, cotton, machine wash, fade resistant, cooling, hypoallergenic",
       {"size": ("twin", "full", "queen", "king"), "color": ("white", "grey", "navy", "beige", "sage")}, (22, 110)),
    _t("bath towel set", "home", "quick dry, highly absorbent, cotton, machine wash, soft, hotel quality, lint free",
       {"count": ("2 pieces", "4 pieces", "6 pieces", "8 pieces"), "color": ("white", "grey", "navy", "beige", "blue")}, (18, 80)),
    _t("office chair", "home", "lumbar support, adjustable height, ergonomic, easy assembly, breathable mesh, swivel, padded armrests",
       {"color": ("black", "grey", "white", "blue")}, (60, 320)),
    _t("table lamp", "home", "dimmable, usb port, touch control, energy efficient, easy assembly, bedside, led bulb included",
       {"color": ("black", "white", "brass", "grey"), "count": ("1 pack", "2 pack")}, (15, 90)),
    _t("storage basket", "home", "foldable, handles, cotton rope, sturdy, large capacity, easy to clean, set of 3",
       {"size": ("small", "medium", "large"), "color": ("beige", "white", "grey", "black")}, (10, 45)),
    _t("wall clock", "home", "silent, battery operated, large numbers, easy to read, modern, wood frame, glass cover",
       {"size": ("10 inch", "12 inch", "14 inch"), "color": ("black", "white", "gold", "wood")}, (12, 60)),
    # electronics
    _t("wireless earbuds", "electronics", "noise cancelling, bluetooth 5.3, waterproof, long battery life, charging case, touch control, built in microphone",
       {"color": ("black", "white", "navy", "pink")}, (20, 180)),
    _t("phone case", "electronics", "shockproof, slim fit, wireless charging compatible, drop protection, clear back, kickstand, anti scratch",
       {"color": ("black", "clear", "blue", "pink", "green"), "model": ("iphone 14", "iphone 15", "galaxy s23", "pixel 8")}, (8, 40)),
    _t("usb c charger", "electronics", "fast charging, foldable plug, compact, dual port, overheat protection, travel size, led indicator",
       {"color": ("white", "black"), "wattage": ("20w", "30w", "65w", "100w")}, (10, 60)),
    _t("bluetooth speaker", "electronics", "waterproof, portable, long battery life, deep bass, built in microphone, stereo pairing, dustproof",
       {"color": ("black", "blue", "red", "grey", "green")}, (20, 200)),
    _t("hdmi cable", "electronics", "high speed, 4k, gold plated, braided, ethernet, 8k, ultra slim",
       {"size": ("3 ft", "6 ft", "10 ft", "15 ft"), "count": ("1 pack", "2 pack", "3 pack")}, (6, 30)),
    _t("computer mouse", "electronics", "wireless, ergonomic, rechargeable, silent click, bluetooth, adjustable dpi, usb receiver",
       {"color": ("black", "white", "grey", "pink", "blue")}, (9, 80)),
    _t("power bank", "electronics", "fast charging, usb c, portable, led display, slim, dual output, wireless charging",
       {"capacity": ("5000mah", "10000mah", "20000mah", "26800mah"), "color": ("black", "white", "blue")}, (15, 70)),
)  # fmt: skip

_BRANDS = (
    "Alderwood", "Brightline", "Cobalt & Co", "Dunmore", "Everkind", "Fernhill", "Goldleaf",
    "Harbor", "Ironbark", "Juniper", "Kestrel", "Larkspur", "Meridian", "Northway", "Oakridge",
    "Pinecrest", "Quillon", "Redfern", "Saltmarsh", "Tidewater", "Umber", "Vantage", "Willowby",
    "Yarrow", "Zephyr", "Ashgrove", "Bramble", "Cinder", "Driftwood", "Emberly",
)  # fmt: skip
_ID_CHARS = string.ascii_uppercase + string.digits


@dataclass(frozen=True)
class Product:
    """One product of the shop."""

    id: str
    title: str
    brand: str
    category: str
    product_type: str
    attributes: tuple[str, ...]
    #: (kind, values) per option kind, values in the order the item page shows them
    options: tuple[tuple[str, tuple[str, ...]], ...]
    price: float

    @property
    def option_values(self) -> tuple[str, ...]:
        return tuple(v for _kind, values in self.options for v in values)

    def kind_of(self, value: str) -> str | None:
        """The option kind a value belongs to (``None``: not an option of this product)."""
        for kind, values in self.options:
            if value in values:
                return kind
        return None

    def text(self) -> str:
        """What the search engine indexes."""
        opts = " ".join(self.option_values)
        return (
            f"{self.title} {self.product_type} {self.category} {' '.join(self.attributes)} {opts}"
        )


def _price(rng: random.Random, low: float, high: float) -> float:
    return round(int(rng.uniform(low, high)) + rng.choice((0.49, 0.95, 0.99)), 2)


def _product(rng: random.Random, pid: str, kind: ProductType) -> Product:
    brand = rng.choice(_BRANDS)
    attributes = tuple(sorted(rng.sample(kind.attributes, rng.randint(2, 4))))
    options = []
    for name, pool in kind.options:
        k = rng.randint(2, min(5, len(pool)))
        chosen = set(rng.sample(pool, k))
        options.append((name, tuple(v for v in pool if v in chosen)))
    shown = rng.sample(attributes, rng.randint(1, 2))
    title = f"{brand} {' '.join(shown).title()} {kind.name.title()}"
    return Product(
        id=pid,
        title=title,
        brand=brand,
        category=kind.category,
        product_type=kind.name,
        attributes=attributes,
        options=tuple(options),
        price=_price(rng, *kind.price),
    )


class Catalogue:
    """The products, by id and in order, and a BM25 search over them."""

    def __init__(self, products: list[Product]) -> None:
        self.products = products
        self.by_id = {p.id: p for p in products}
        self._search: TextIndex | None = None

    def __len__(self) -> int:
        return len(self.products)

    def get(self, product_id: str) -> Product | None:
        """The product with this id (ids are matched case-insensitively)."""
        return self.by_id.get(product_id.strip().upper())

    def search(self, query: str, k: int = MAX_RESULTS) -> list[Product]:
        """The best ``k`` products for ``query`` (BM25), best first; none for a query that shares
        no word with the shop."""
        if self._search is None:
            self._search = _index(self.products)
        return [self.products[h.doc] for h in self._search.search(query, k)]


def _index(products: list[Product]) -> TextIndex:
    # toollab.retrieval loads numpy when imported (the retrieval extra): only a search needs it
    from toollab.retrieval.text_index import TextIndex

    return TextIndex([p.text() for p in products])


@cache
def catalogue(size: int = SIZE, seed: int = CATALOGUE_SEED) -> Catalogue:
    """The shop: ``size`` products drawn with ``seed`` (the same every time)."""
    rng = random.Random(f"webshop-catalogue|{seed}")
    ids: set[str] = set()
    products = []
    for i in range(size):
        pid = ""
        while not pid or pid in ids:
            pid = "B0" + "".join(rng.choice(_ID_CHARS) for _ in range(8))
        ids.add(pid)
        products.append(_product(rng, pid, TYPES[i % len(TYPES)]))
    order = list(range(size))
    rng.shuffle(order)
    return Catalogue([products[i] for i in order])
