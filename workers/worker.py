"""The process edge for ``celery -A workers.worker worker`` and ``... beat``.

The environment is read here, once; everything below gets the settings passed in.
"""

from __future__ import annotations

import logging

from workers.app import make_celery
from workers.settings import Settings
from workers.tasks import register

settings = Settings()
logging.basicConfig(
    level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s"
)
app = make_celery(settings)
runtime = register(app, settings)
