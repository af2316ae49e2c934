"""Deployment recipes: Dockerfile, docker-compose, Kubernetes manifests and the Ray Serve app.

A package so that Ray replicas can import `deploy.ray_serve` by name.
"""
