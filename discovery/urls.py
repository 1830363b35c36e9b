from django.urls import path

from discovery import views

app_name = "discovery"

urlpatterns = [
    path(".well-known/ai-catalog.json", views.AiCatalogView.as_view(), name="ai-catalog"),
    # ARD v0.91 placed its manifest at /.well-known/ard.json; ARD now uses ai-catalog.json. Both serve it.
    path(".well-known/ard.json", views.AiCatalogView.as_view(), name="ard-manifest"),
    path("ard/search", views.ArdSearchView.as_view(), name="ard-search"),
    path("ard/explore", views.ArdExploreView.as_view(), name="ard-explore"),
    path("ard/agents/<str:identifier>", views.ArdEntryView.as_view(), name="ard-entry"),
]
