FROM python:3.12-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
# Third-party packages at the versions and hashes CI tested (requirements/runtime.txt),
# in a layer of their own that a code change does not rebuild.
COPY requirements/runtime.txt ./requirements/
RUN pip install --no-cache-dir --require-hashes -r requirements/runtime.txt
COPY pyproject.toml README.md ./
COPY reviewapp ./reviewapp
COPY clients/python ./clients/python
# The server and its client package (the server verifies with its offline verifier),
# built with the locked setuptools; `pip check` proves the lock holds their dependencies.
RUN pip install --no-cache-dir --no-deps --no-build-isolation ./clients/python . && pip check
COPY . .
RUN useradd --create-home reviewapp \
    && mkdir -p /var/lib/reviewapp /var/lib/reviewapp-witness \
    && chown reviewapp /var/lib/reviewapp /var/lib/reviewapp-witness
USER reviewapp
