from django.urls import path, re_path

from skills.api import views

app_name = "skills-api"
# A skill's registry path without its leading "/": one segment for a published skill, more for a mirrored
# one (`<server path>/<skill path>`: skills/mirroring.py); before `/files/`, the shortest that fits.
SKILL_PATH = r"(?P<skill_path>[a-z0-9_-]+(?:/[a-z0-9_-]+)*)"
SKILL_PATH_BEFORE = r"(?P<skill_path>[a-z0-9_-]+(?:/[a-z0-9_-]+)*?)"

urlpatterns = [
    path("api/skills", views.SkillListView.as_view(), name="list"),
    path("api/internal/skills", views.InternalSkillListView.as_view(), name="internal-list"),
    re_path(
        rf"^api/internal/skills/{SKILL_PATH}$",
        views.InternalSkillDetailView.as_view(),
        name="internal-detail",
    ),
    path("api/attestations/keys", views.AttestationKeysView.as_view(), name="attestation-keys"),
    re_path(
        r"^api/attestations/(?P<sha256>(sha256:)?[0-9a-fA-F]{64})$",
        views.AttestationView.as_view(),
        name="attestation",
    ),
    re_path(
        rf"^api/skills/{SKILL_PATH_BEFORE}/files/(?P<file_path>.+)$",
        views.SkillFileView.as_view(),
        name="file",
    ),
    re_path(rf"^api/skills/{SKILL_PATH}$", views.SkillDetailView.as_view(), name="detail"),
]
