from django.urls import path

from discovery import views

app_name = "discovery"

urlpatterns = [path(".well-known/ai-catalog.json", views.AiCatalogView.as_view(), name="ai-catalog")]
