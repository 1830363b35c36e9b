"""The agents page and its enable/disable form."""

from django.urls import path

from agents import views

app_name = "agents"

urlpatterns = [
    path("agents", views.agents_page, name="page"),
    path("agents/<path:agent_path>/toggle", views.agent_toggle_form, name="toggle"),
]
