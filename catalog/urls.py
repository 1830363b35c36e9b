from django.urls import path

from catalog import views

app_name = "catalog"

urlpatterns = [path("catalog", views.catalog_view, name="page")]
