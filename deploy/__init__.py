"""Deployment recipes: Dockerfile, docker-compose, Kubernetes manifests and the Ray Serve config.

A package so that its files (ray_serve.yaml, config/) install with Arbiter; the Ray Serve app
itself is `services.ray_serve`.
"""
