"""One environment per ToolEyes scenario (importing the package registers them).

| scenario | code | environment |
|---|---|---|
| text generation | TG | ``text_generation`` |
| data understanding | DU | ``data_understanding`` |
| real-time search | RS | ``realtime_search`` (and ``weather``) |
| application manipulation | AM | ``workspace`` (and ``spreadsheet``, ``favourites``, ``household``) |
| personal life | PL | ``personal_life`` (and ``home_search``, ``trip_booking``) |
| information retrieval | IR | ``info_retrieval`` |
| financial transactions | FT | ``finance`` |
"""

from toollab.envs.scenarios import data, finance, personal, realtime, retrieval, text, workspace

__all__ = ["data", "finance", "personal", "realtime", "retrieval", "text", "workspace"]
