"""NeMo-Gym's resources-server interface over Arbiter's graders and episodes.

NeMo-Gym (and the trainers driving it: NeMo-RL, TRL's NeMo-Gym integration) talk to a "resources
server": POST /seed_session, the tools its agent calls (POST /<tool>), /verify and
/aggregate_metrics, with the rollout's session carried in a cookie. This package serves that
interface on the service that holds episodes (`episodes.nemo_gym.enabled`): the reward of /verify
is the serving engine's grade of the final assistant text, the tools run in an Arbiter episode.

- settings.py: the section `episodes.nemo_gym`
- reading.py: what a NeMo-Gym request carries (label, prompt, final text), pure functions
- sessions.py: cookie sessions, each optionally bound to an episode
- facade.py: seed / tool / verify / close, the logic
- metrics.py: /aggregate_metrics as NeMo-Gym computes it
- routes.py: the HTTP routes
"""
