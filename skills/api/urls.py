from django.urls import path, re_path

from skills.api import views

app_name = "skills-api"

urlpatterns = [
    path("api/skills", views.SkillListView.as_view(), name="list"),
    re_path(
        r"^api/skills/(?P<skill_path>[a-z0-9-]+)/files/(?P<file_path>.+)$",
        views.SkillFileView.as_view(),
        name="file",
    ),
    re_path(r"^api/skills/(?P<skill_path>[a-z0-9-]+)$", views.SkillDetailView.as_view(), name="detail"),
]
