FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
# git (and ssh for SSH remotes) for the one-way git mirror (mirror/git.py).
RUN apt-get update && apt-get install -y --no-install-recommends git openssh-client \
 && rm -rf /var/lib/apt/lists/*
COPY requirements.txt requirements-nodeps.txt constraints.txt ./
RUN pip install --no-cache-dir -r requirements.txt -c constraints.txt \
 && pip install --no-cache-dir --no-deps -r requirements-nodeps.txt
COPY . .
# var/media exists in the image so a new named volume mounted there starts owned by brain.
RUN useradd --system --uid 1000 brain && mkdir -p var/media && chown -R brain var
USER brain
RUN BRAIN_SECRET_KEY=build-only-collectstatic-key-not-used-at-runtime DATABASE_URL=postgresql://x@localhost/x \
    REDIS_URL=redis://localhost:6379/0 python manage.py collectstatic --noinput
EXPOSE 8000
