from django.urls import re_path

from skills import views

app_name = "skills"

NAME = r"(?P<skill_name>[a-z0-9]+(?:-[a-z0-9]+)*)"

urlpatterns = [
    re_path(r"^\.well-known/agent-skills/index\.json$", views.IndexView.as_view(), name="index"),
    re_path(rf"^\.well-known/agent-skills/{NAME}\.tar\.gz$", views.ArchiveView.as_view(), name="archive"),
    re_path(
        rf"^\.well-known/agent-skills/{NAME}/(?P<file_path>.+)$", views.SkillFileView.as_view(), name="file"
    ),
    re_path(r"^\.well-known/skills/index\.json$", views.OldIndexView.as_view(), name="old-index"),
    re_path(
        rf"^\.well-known/skills/{NAME}/(?P<file_path>.+)$", views.SkillFileView.as_view(), name="old-file"
    ),
]
