from django.urls import path

from gateway.api import validate

app_name = "gateway-api"

urlpatterns = [
    path("validate", validate.ValidateView.as_view(), name="validate"),
]
