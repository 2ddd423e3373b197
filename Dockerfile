FROM python:3.12-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY reviewapp ./reviewapp
COPY clients/python ./clients/python
# The client package too: the server verifies with its offline verifier.
RUN pip install --no-cache-dir ./clients/python .
COPY . .
RUN useradd --create-home reviewapp \
    && mkdir -p /var/lib/reviewapp /var/lib/reviewapp-witness \
    && chown reviewapp /var/lib/reviewapp /var/lib/reviewapp-witness
USER reviewapp
